import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { judgeDeviceEntries, judgeEntries, readingsOf } from './reading-entries.js';

const DEVICE = '0190a3c4-5b6d-7e8f-9a0b-1c2d3e4f5a6b';

describe('judgeDeviceEntries', () => {
  it('names the credential\'s device on every usable entry and judges the rest as POST /readings does', () => {
    const list = [
      { recordedAt: '2026-11-24T08:30:00Z', temperatureC: 4.5 },
      { recordedAt: '2026-11-24T08:31:00Z', temperatureC: 400 },
      { recordedAt: 'yesterday', temperatureC: 4 },
    ];
    const device = judgeDeviceEntries(list, DEVICE.toUpperCase());
    const api = judgeEntries(list.map((entry) => ({ ...entry, deviceId: DEVICE })));
    expect(device.entries).toEqual(api.entries);
    expect(device.entries[0]?.deviceId).toBe(DEVICE);
    expect(device.rejected).toEqual(api.rejected);
    expect(device.rejected.map((r) => r.error.details)).toEqual([
      { field: 'readings.1.temperatureC', issue: ParameterIssue.OutOfRange },
      { field: 'readings.2.recordedAt', issue: ParameterIssue.InvalidFormat },
    ]);
  });

  it('refuses an entry that names a device itself: the credential names it', () => {
    const { entries, rejected } = judgeDeviceEntries(
      [
        { recordedAt: '2026-11-24T08:30:00Z', temperatureC: 4, deviceId: DEVICE },
        { recordedAt: '2026-11-24T08:30:00Z', temperatureC: 4, serialNumber: 'X' },
      ],
      DEVICE,
    );
    expect(entries).toEqual([]);
    expect(rejected.map((r) => [r.index, r.error.code, r.error.details])).toEqual([
      [0, ErrorCode.InvalidParameter, { field: 'readings.0.deviceId', issue: ParameterIssue.UnknownField }],
      [1, ErrorCode.InvalidParameter, { field: 'readings.1.serialNumber', issue: ParameterIssue.UnknownField }],
    ]);
  });

  it('still needs at least one measurement', () => {
    const { rejected } = judgeDeviceEntries([{ recordedAt: '2026-11-24T08:30:00Z' }], DEVICE);
    expect(rejected[0]?.error.details).toEqual({ field: 'readings.0', issue: ParameterIssue.Required });
  });
});

describe('readingsOf', () => {
  it('bounds the entries by the caller\'s maximum', () => {
    const body = { readings: Array.from({ length: 3 }, () => ({})) };
    expect(readingsOf(body, 3)).toHaveLength(3);
    const refusal = (() => {
      try {
        readingsOf(body, 2);
        return undefined;
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(DomainError);
    expect((refusal as DomainError).details).toEqual({ field: 'readings', issue: ParameterIssue.OutOfRange });
  });
});
