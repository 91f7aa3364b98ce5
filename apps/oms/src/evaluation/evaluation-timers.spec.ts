import type { Logger } from '@tracking/core';
import type { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import type { EvaluationRecordRepository } from './evaluation-record.repository.js';
import type { OmsConfig } from '../config.js';
import { EvaluationTimers } from './evaluation-timers.js';
import type { ShipmentEvaluator } from './shipment-evaluator.js';

const scope = (i: number) => ({ tenantId: 't', accountId: 'a', shipmentId: `s${i}`, dueAt: new Date(0) });
const quiet = { warn: () => undefined } as unknown as Logger;

/** A sweep over `due` (a full batch each time it is asked) whose evaluations do `evaluate`. */
function timers(due: () => ReturnType<typeof scope>[], evaluate: () => Promise<void>) {
  let calls = 0;
  const evaluator = { evaluateMany: () => ((calls += 1), evaluate()) } as unknown as ShipmentEvaluator;
  const records = { due: async () => due() } as unknown as EvaluationRecordRepository;
  const sweeper = new EvaluationTimers(evaluator, records, { manager: {} } as DataSource, {} as OmsConfig, quiet);
  return { sweeper, calls: () => calls };
}

describe('the evaluation timers sweep', () => {
  it('leaves shipments whose evaluation failed to the next sweep instead of taking them again at once', async () => {
    const full = Array.from({ length: 500 }, (_, i) => scope(i));
    const { sweeper, calls } = timers(() => full, () => Promise.reject(new Error('the DMS does not answer')));
    expect(await sweeper.sweep()).toBe(500);
    expect(calls()).toBe(5);
  });

  it('takes the next batch at once when a full batch was evaluated', async () => {
    const batches = [Array.from({ length: 500 }, (_, i) => scope(i)), [scope(500)]];
    const { sweeper, calls } = timers(() => batches.shift() ?? [], () => Promise.resolve());
    expect(await sweeper.sweep()).toBe(501);
    expect(calls()).toBe(6);
  });
});
