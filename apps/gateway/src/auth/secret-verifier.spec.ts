import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { ServiceMetrics } from '@tracking/observability';
import { describe, expect, it } from 'vitest';
import { readGatewayConfig } from '../config.js';
import { SecretVerifier } from './secret-verifier.js';

describe('SecretVerifier hashing bound', () => {
  it('hashes TOKEN_HASH_CONCURRENCY at once, queues TOKEN_HASH_QUEUE more and refuses the rest with 503', async () => {
    const verifier = new SecretVerifier(readGatewayConfig({ TOKEN_HASH_CONCURRENCY: '2', TOKEN_HASH_QUEUE: '3' }), new ServiceMetrics('gateway'));
    // Asked in one turn: no hash (tens of milliseconds of scrypt) can end before the last is asked.
    const answers = await Promise.allSettled(Array.from({ length: 8 }, () => verifier.matches(null, 'not-the-secret')));
    const refused = answers.filter((answer) => answer.status === 'rejected');
    expect(answers.slice(0, 5)).toEqual(Array.from({ length: 5 }, () => ({ status: 'fulfilled', value: false })));
    expect(refused).toHaveLength(3);
    for (const answer of refused) {
      expect(answer.reason).toBeInstanceOf(DomainError);
      expect((answer.reason as DomainError).code).toBe(ErrorCode.ServiceUnavailable);
    }
    // Every place is free again once the hashes ended.
    const again = await Promise.allSettled(Array.from({ length: 5 }, () => verifier.matches(null, 'not-the-secret')));
    expect(again.every((answer) => answer.status === 'fulfilled')).toBe(true);
  });
});
