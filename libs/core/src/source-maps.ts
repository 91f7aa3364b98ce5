import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import sourceMapSupport from 'source-map-support';

/**
 * Stack traces that name our TypeScript sources, paying only for the maps they use. Every entry file
 * imports this module first (`import '@tracking/core/source-maps'`), so errors thrown while the rest loads
 * are mapped too; the processes run without `--enable-source-maps`.
 *
 * Why not Node's flag: on Node 20 it cannot be scoped, and it reads, parses and keeps the source map of
 * every file it loads, node_modules' included, as each loads. TypeORM's, class-validator's and rxjs's maps
 * carry their sources: TypeORM's alone add 6.8 MB to a heap (measured, `import('typeorm')` with and
 * without the flag), and the flag cost each process 10 to 35 MiB of idle RSS (BENCHMARKS.md).
 * source-map-support reads a map when a stack trace first names its file, and only for our files (the
 * `.js.map` tsc writes beside each): frames in node_modules show the packages' JavaScript positions, as
 * they would with no source maps at all.
 */
sourceMapSupport.install({
  environment: 'node',
  // Node prints an uncaught error itself, with the stack formatted here.
  handleUncaughtExceptions: false,
  overrideRetrieveSourceMap: true,
  retrieveSourceMap: ourSourceMap,
});

function ourSourceMap(source: string): { url: string; map: string } | null {
  const path = source.startsWith('file:') ? fileURLToPath(source) : source;
  if (!path.endsWith('.js') || path.includes('/node_modules/')) return null;
  try {
    return { url: `${path}.map`, map: readFileSync(`${path}.map`, 'utf8') };
  } catch {
    return null;
  }
}
