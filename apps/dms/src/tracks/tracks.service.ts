/* eslint-disable @typescript-eslint/no-non-null-assertion -- loops over parallel arrays indexed within their lengths: `!` states the bound the loop checks, which noUncheckedIndexedAccess cannot see. */
import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, type TrackReply, type TrackRequest } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { DmsConfig } from '../config.js';
import { DMS_CONFIG } from '../tokens.js';
import { TrackRepository } from './track.repository.js';
import { simplifyPaths } from './track-simplification.js';

/** `details.policy` of the 429 for a tenant over its concurrent track reads. */
export const TRACK_READS_POLICY = 'track-reads';

/**
 * A shipment's track: its devices' positions within their assignment periods, simplified to a budget.
 * At most `TRACK_CONCURRENCY_PER_TENANT` tracks of one tenant are read at once on this replica; one
 * more is refused at once with 429 `RateLimitExceeded` (docs/tracks.md, "Cost").
 */
@Injectable()
export class TracksService {
  /**
   * The tracks each tenant is reading now; a tenant leaves the map when its last read ends. A count, not a
   * semaphore: a read beyond the limit is refused, never queued, so there is nothing to wait on.
   */
  private readonly reads = new Map<string, number>();

  constructor(
    private readonly tracks: TrackRepository,
    @Inject(DMS_CONFIG) private readonly config: DmsConfig,
  ) {}

  async get(request: TrackRequest): Promise<TrackReply> {
    const running = this.reads.get(request.tenantId) ?? 0;
    if (running >= this.config.TRACK_CONCURRENCY_PER_TENANT) {
      throw new DomainError(
        ErrorCode.RateLimitExceeded,
        `Too many track requests of this tenant are running (at most ${this.config.TRACK_CONCURRENCY_PER_TENANT} at once); retry after the Retry-After delay.`,
        { policy: TRACK_READS_POLICY },
      );
    }
    // Counted before the first await, so requests of one turn see each other.
    this.reads.set(request.tenantId, running + 1);
    try {
      return await this.read(request);
    } finally {
      const left = (this.reads.get(request.tenantId) ?? 1) - 1;
      if (left === 0) this.reads.delete(request.tenantId);
      else this.reads.set(request.tenantId, left);
    }
  }

  private async read(request: TrackRequest): Promise<TrackReply> {
    const { devices, totalPoints, sampled } = await this.tracks.findPositions(request);
    const { keep, simplified: dropped } = simplifyPaths(devices, request.maxPoints);
    // A sample has left positions out even when all of it fits.
    const simplified = sampled || dropped;
    const kept: { device: number; index: number }[] = [];
    devices.forEach((device, d) => {
      const keepDevice = keep[d]!;
      for (let i = 0; i < device.t.length; i++) if (keepDevice[i] === 1) kept.push({ device: d, index: i });
    });
    // Devices come in id order, so ties on recordedAt stay in device-id order (a stable sort).
    kept.sort((a, b) => devices[a.device]!.t[a.index]! - devices[b.device]!.t[b.index]!);
    const reply: TrackReply = {
      deviceIds: devices.map((device) => device.deviceId),
      device: [],
      t: [],
      lat: [],
      lng: [],
      accuracyMeters: [],
      totalPoints,
      simplified,
    };
    for (const { device, index } of kept) {
      const positions = devices[device]!;
      reply.device.push(device);
      reply.t.push(positions.t[index]!);
      reply.lat.push(positions.lat[index]!);
      reply.lng.push(positions.lng[index]!);
      reply.accuracyMeters.push(positions.accuracyMeters[index]!);
    }
    return reply;
  }
}
