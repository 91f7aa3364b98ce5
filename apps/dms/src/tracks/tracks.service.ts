/* eslint-disable @typescript-eslint/no-non-null-assertion -- loops over parallel arrays indexed within their lengths: `!` states the bound the loop checks, which noUncheckedIndexedAccess cannot see. */
import { Injectable } from '@nestjs/common';
import type { TrackReply, TrackRequest } from '@tracking/contracts';
import { TrackRepository } from './track.repository.js';
import { simplifyPaths } from './track-simplification.js';

/** A shipment's track: its devices' positions within their assignment periods, simplified to a budget. */
@Injectable()
export class TracksService {
  constructor(private readonly tracks: TrackRepository) {}

  async get(request: TrackRequest): Promise<TrackReply> {
    const devices = await this.tracks.findPositions(request);
    const totalPoints = devices.reduce((sum, device) => sum + device.t.length, 0);
    const { keep, simplified } = simplifyPaths(devices, request.maxPoints);
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
