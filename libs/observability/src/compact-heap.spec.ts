import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import { compactHeap, compactsHeapAfterStart } from './compact-heap.js';

function newSpaceCommittedMB(): number {
  const space = v8.getHeapSpaceStatistics().find((each) => each.space_name === 'new_space');
  if (!space) throw new Error('V8 reports no new_space');
  return space.space_size / 1e6;
}

/**
 * Grows the young generation as a start-up does: objects that survive scavenges (here, kept for a while in
 * a window of the newest ones) make V8 enlarge its semi-spaces.
 */
function growYoungGeneration(): void {
  const window = new Array<object>(100_000);
  for (let i = 0; i < 400_000; i += 1) window[i % window.length] = { i, label: `object ${i}`, pair: [i, i + 1] };
}

describe('compactHeap', () => {
  it('shrinks the young generation that a burst of allocation grew', async () => {
    growYoungGeneration();
    const grown = newSpaceCommittedMB();
    // Without this the test would prove nothing: V8's largest young generation is two 16 MiB semi-spaces.
    expect(grown).toBeGreaterThanOrEqual(8);

    const compaction = await compactHeap();

    expect(newSpaceCommittedMB()).toBeLessThanOrEqual(grown / 4);
    expect(compaction.tookMs).toBeGreaterThanOrEqual(0);
    expect(compaction.rssAfterMiB).toBeGreaterThan(0);
    expect(compaction.rssAfterMiB).toBeLessThan(compaction.rssBeforeMiB);
  });

  it('is left out in a process that runs without the memory reducer, as the OMS and the DMS do', () => {
    expect(compactsHeapAfterStart(['--no-memory-reducer', '--no-allocation-site-pretenuring'])).toBe(false);
    expect(compactsHeapAfterStart(['--heap-growing-percent=100'])).toBe(true);
    expect(compactsHeapAfterStart([])).toBe(true);
  });
});
