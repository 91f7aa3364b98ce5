import { ErrorCode, type TrackRequest } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { readDmsConfig } from '../config.js';
import type { TrackPositions, TrackRepository } from './track.repository.js';
import { TRACK_READS_POLICY, TracksService } from './tracks.service.js';

/** A repository whose reads end (or fail) when the test says so. */
function gatedRepository() {
  const reads: { finish: () => void; fail: () => void }[] = [];
  const repository = {
    findPositions: () =>
      new Promise<TrackPositions>((resolve, reject) => {
        reads.push({ finish: () => resolve({ devices: [], totalPoints: 0, sampled: false }), fail: () => reject(new Error('statement timeout')) });
      }),
  } as unknown as TrackRepository;
  return { repository, reads };
}

const request = (tenantId: string): TrackRequest => ({ tenantId, accountId: 'account', shipmentId: 'shipment', maxPoints: 100 });

async function refusal(promise: Promise<unknown>): Promise<DomainError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

describe('TracksService per-tenant bound', () => {
  it('reads TRACK_CONCURRENCY_PER_TENANT tracks of a tenant at once and refuses one more with 429, other tenants aside', async () => {
    const { repository, reads } = gatedRepository();
    const tracks = new TracksService(repository, readDmsConfig({ TRACK_CONCURRENCY_PER_TENANT: '2' }));
    const first = tracks.get(request('a'));
    const second = tracks.get(request('a'));
    const refused = await refusal(tracks.get(request('a')));
    expect(refused.code).toBe(ErrorCode.RateLimitExceeded);
    expect(refused.details).toEqual({ policy: TRACK_READS_POLICY });
    const otherTenant = tracks.get(request('b'));
    expect(reads).toHaveLength(3);

    // A read that fails frees its place as one that ends does.
    reads[0]!.fail();
    await expect(first).rejects.toThrow('statement timeout');
    const third = tracks.get(request('a'));
    expect((await refusal(tracks.get(request('a')))).code).toBe(ErrorCode.RateLimitExceeded);
    for (const read of reads.slice(1)) read.finish();
    await Promise.all([second, otherTenant, third]);
    // Every place is free again.
    const again = [tracks.get(request('a')), tracks.get(request('a'))];
    expect(reads).toHaveLength(6);
    for (const read of reads.slice(4)) read.finish();
    await Promise.all(again);
  });
});
