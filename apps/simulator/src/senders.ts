import type { Account } from '@tracking/sdk';

/** A tracker of the simulation, as the API knows it. */
export interface SimulatedDevice {
  id: string;
  serialNumber: string;
}

/** One reading of a simulated tracker, protocol-neutral. */
export interface SimulatedReading {
  recordedAt: Date;
  lat: number;
  lng: number;
  accuracyMeters: number;
  temperatureC: number;
  batteryPercent: number;
  speedKmh: number;
}

/**
 * How readings reach the system: the seam for protocols. The JSON API is the first; a sender for the
 * device gateway's protocols (MQTT, OsmAnd over HTTP, Teltonika over TCP) identifies the device its own
 * way (its serial number or IMEI) and encodes the same readings in its own frames.
 */
export interface ReadingSender {
  /** Shown in the simulator's output. */
  readonly protocol: string;
  /** Sends one tick's readings of one device, oldest first; resolves once the system has taken them. */
  send(device: SimulatedDevice, readings: readonly SimulatedReading[]): Promise<void>;
  /** Closes connections the sender keeps (none for HTTP). */
  close(): Promise<void>;
}

/** `POST /v1/accounts/{accountId}/readings` through the SDK (retries, token, idempotency key included). */
export class JsonApiSender implements ReadingSender {
  readonly protocol = 'JSON API';

  constructor(private readonly account: Account) {}

  async send(device: SimulatedDevice, readings: readonly SimulatedReading[]): Promise<void> {
    const result = await this.account.readings.create(
      readings.map((reading) => ({
        deviceId: device.id,
        recordedAt: reading.recordedAt.toISOString(),
        location: { lat: reading.lat, lng: reading.lng, accuracyMeters: reading.accuracyMeters },
        temperatureC: reading.temperatureC,
        batteryPercent: reading.batteryPercent,
      })),
    );
    if (result.rejected.length > 0) {
      throw new Error(`the API refused readings of ${device.serialNumber}: ${JSON.stringify(result.rejected)}`);
    }
  }

  /** HTTP keeps no connection of its own to close. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}
