import type { ShipmentScope } from '@tracking/contracts';
import type { Logger } from '@tracking/core';
import type { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import type { DueEvaluation, EvaluationRecordRepository } from './evaluation-record.repository.js';
import type { OmsConfig } from '../config.js';
import { EvaluationTimers } from './evaluation-timers.js';

const scope = (i: number): DueEvaluation => ({ tenantId: 't', accountId: 'a', shipmentId: `s${i}`, dueAt: new Date(0), partition: i % 2 });
const quiet = { warn: () => undefined } as unknown as Logger;

/** A sweep over `due` (a full batch each time it is asked) whose evaluations do `evaluate`. */
function timers(due: () => DueEvaluation[], evaluate: () => Promise<void>) {
  const calls: { partition: number; chunk: ShipmentScope[] }[] = [];
  const records = { due: async () => due() } as unknown as EvaluationRecordRepository;
  const sweeper = new EvaluationTimers(records, { manager: {} } as DataSource, { READINGS_PARTITIONS: 2 } as OmsConfig, quiet);
  const run = () =>
    sweeper.sweep([0, 1], (partition, chunk) => {
      calls.push({ partition, chunk });
      return evaluate();
    });
  return { run, calls };
}

describe('the evaluation timers sweep', () => {
  it('leaves shipments whose evaluation failed to the next sweep instead of taking them again at once', async () => {
    const full = Array.from({ length: 500 }, (_, i) => scope(i));
    const { run, calls } = timers(() => full, () => Promise.reject(new Error('the DMS does not answer')));
    expect(await run()).toBe(500);
    // 250 shipments in each of two partitions: chunks of 100, 100, 50 each.
    expect(calls.map((call) => call.chunk.length)).toEqual([100, 100, 50, 100, 100, 50]);
  });

  it('takes the next batch at once when a full batch was evaluated, and never mixes partitions in a chunk', async () => {
    const batches = [Array.from({ length: 500 }, (_, i) => scope(i)), [scope(500)]];
    const { run, calls } = timers(() => batches.shift() ?? [], () => Promise.resolve());
    expect(await run()).toBe(501);
    expect(calls).toHaveLength(7);
    for (const { partition, chunk } of calls) for (const item of chunk) expect(Number(item.shipmentId.slice(1)) % 2).toBe(partition);
  });
});
