import { AlertKind } from '@tracking/contracts';
import type { AlertKind as GeofenceAlertKind } from '@tracking/geofence';
import { describe, expect, it } from 'vitest';
import { alertKind } from './shipment-evaluator.js';

describe("the engine's alert kinds", () => {
  it('are the API kinds, spelled the same', () => {
    const engine: Record<GeofenceAlertKind, true> = {
      TemperatureHigh: true,
      TemperatureLow: true,
      HumidityHigh: true,
      HumidityLow: true,
      Shock: true,
      Light: true,
      BatteryLow: true,
      SignalLoss: true,
    };
    expect(Object.keys(engine).map((kind) => alertKind(kind as GeofenceAlertKind)).sort()).toEqual(Object.values(AlertKind).sort());
  });
});
