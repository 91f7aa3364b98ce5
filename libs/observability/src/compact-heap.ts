/** What one compaction did, for the start-up's debug line. */
export interface HeapCompaction {
  tookMs: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
}

/**
 * Whether this process compacts its heap before ready: not when it runs without V8's memory reducer
 * (`--no-memory-reducer`, the OMS and the DMS; scripts/start-settings.mjs). After a collection made to
 * reduce memory, V8 sets its next limit for the old generation just above what survived (its smallest
 * growing factor), and those two run without the reducer because under the load that followed its
 * collections they collected the old generation again and again. So did the OMS after the compaction, in 2
 * of 4 runs: 8 and 13 full collections in the first 3 to 7 s of list shipments after a minute idle, against
 * one in each run without it (`--trace-gc`, `node bench/threads.mjs`; docs/operations.md). The processes
 * that keep the reducer get such a collection from it anyway, 30 to 65 s after ready.
 */
export function compactsHeapAfterStart(execArgv: readonly string[] = process.execArgv): boolean {
  return !execArgv.includes('--no-memory-reducer');
}

/**
 * Gives back what start-up left behind, once, just before a process says it is ready: the garbage of
 * loading and wiring its modules, and the young generation that start-up grew to its largest (two 16 MiB
 * semi-spaces). V8 keeps both until its memory reducer runs, 30 to 65 s after ready in our processes.
 *
 * Only a collection that V8 runs to reduce memory shrinks the young generation: the memory reducer's, or
 * the one that follows a low-memory notification. Node offers neither to JavaScript: `gc()` (with
 * `--expose-gc`) collects the old generation and keeps the young one's pages, and left the gateway at 152
 * to 160 MiB for as long as it was read. The inspector's `HeapProfiler.collectGarbage`, sent over an
 * in-process session (no port opens, nothing stays enabled after it), is V8's low-memory notification: it
 * collects until nothing more is freed and shrinks the young generation to its initial size. It took 60 to
 * 150 ms of the main thread in our processes (two or three full collections of heaps of 30 to 50 MB), so
 * it runs before ready and never again; under load V8 grows the young generation back as requests need it.
 *
 * Measured: docs/operations.md, "Node options and memory".
 */
export async function compactHeap(): Promise<HeapCompaction> {
  const started = performance.now();
  const rssBeforeMiB = mib(process.memoryUsage.rss());
  // Imported here: a Node built without the inspector throws on the import, and then only this fails.
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  try {
    await session.post('HeapProfiler.collectGarbage');
  } finally {
    session.disconnect();
  }
  return { tookMs: Math.round(performance.now() - started), rssBeforeMiB, rssAfterMiB: mib(process.memoryUsage.rss()) };
}

function mib(bytes: number): number {
  return Math.round(bytes / 104857.6) / 10;
}
