import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { defineConfig, type Plugin } from 'vitest/config';

const libs = ['contracts', 'core', 'database', 'messaging', 'observability', 'paging', 'testing', 'webhooks', 'outbox', 'sdk', 'geofence', 'readings', 'rate-limit'];

/**
 * Compiles TypeScript with TypeScript itself: esbuild and oxc cannot emit the decorator metadata
 * that Nest's dependency injection reads, and transpileModule emits it one file at a time.
 */
function typescriptWithDecoratorMetadata(): Plugin {
  const compilerOptions: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.ESNext,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    useDefineForClassFields: false,
    sourceMap: true,
    inlineSources: true,
  };
  return {
    name: 'typescript-decorator-metadata',
    enforce: 'pre',
    transform(code, id) {
      if (!id.endsWith('.ts') || id.includes('/node_modules/')) return null;
      const output = ts.transpileModule(code, { compilerOptions, fileName: id });
      return { code: output.outputText, map: output.sourceMapText ? JSON.parse(output.sourceMapText) : null };
    },
  };
}

export default defineConfig({
  plugins: [typescriptWithDecoratorMetadata()],
  oxc: false,
  resolve: {
    alias: [
      // Subpath exports, before their packages' own entries (an alias matches an import's beginning).
      ...['core/source-maps', 'messaging/nats', 'database/batched-rows'].map((subpath) => ({
        find: `@tracking/${subpath}`,
        replacement: fileURLToPath(new URL(`./libs/${subpath.replace('/', '/src/')}.ts`, import.meta.url)),
      })),
      ...libs.map((lib) => ({
        find: `@tracking/${lib}`,
        replacement: fileURLToPath(new URL(`./libs/${lib}/src/index.ts`, import.meta.url)),
      })),
    ],
  },
  test: {
    include: ['apps/*/src/**/*.spec.ts', 'libs/*/src/**/*.spec.ts', 'test/**/*.spec.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Three test files at a time. Each file has its own databases, prefixes and processes, and most of a
    // file's time is spent waiting on PostgreSQL, NATS and child processes, so three share two cores well:
    // the whole suite took 349 s here against about 16 minutes one file at a time (2026-11-27), and stays
    // within PostgreSQL's 100 connections.
    maxWorkers: 3,
    testTimeout: 30000,
    hookTimeout: 60000,
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' },
  },
});
