import type { AvlIo, AvlRecord } from './teltonika-codec.js';

/** IO element ids this mapping reads (Teltonika's AVL id list, the same for FMB/FMC/FMM devices). */
export const IO_BATTERY_LEVEL = 113;
export const IO_DALLAS_TEMPERATURE_1 = 72;

/**
 * Values a Dallas temperature sensor reports instead of a temperature: 850 sensor not ready, 2000 value
 * read error, 3000 not connected, 4000 id failed, 5000 same id (Teltonika's AVL id list). 850 would
 * otherwise pass as 85.0 °C.
 */
const DALLAS_ERROR_CODES = new Set([850, 2000, 3000, 4000, 5000]);
/** The measuring range of the DS18B20 Teltonika sells for IO 72, in °C. */
const DALLAS_MIN_C = -55;
const DALLAS_MAX_C = 125;

/** The largest epoch millisecond a JavaScript Date (and thus an RFC 3339 timestamp) can hold. */
const MAX_DATE_MS = 8.64e15;

/**
 * One AVL record as a reading in our JSON shape (the entries of `POST /readings`, without a device: the
 * credential names it), or null when the record holds nothing to store (no fix and neither battery nor
 * temperature): such a record is acknowledged and counted, never sent to the DMS.
 *
 * - timestamp (ms) -> `recordedAt` (RFC 3339, UTC, milliseconds)
 * - longitude/latitude (1e-7 degrees) -> `location.lng`/`lat`, altitude (m) -> `altitudeMeters`, angle ->
 *   `headingDegrees`, speed (km/h) -> `speedMps`; no fix (0 satellites, or 0/0: a device without a fix
 *   repeats its last fix's position) -> `location: null`
 * - IO 113 (battery level, %) -> `batteryPercent`, when it is a percentage (0..100: some older device
 *   families use id 113 for another value, which would otherwise make the whole reading refused)
 * - IO 72 (first Dallas sensor, signed, 0.1 °C) -> `temperatureC`, absent for the sensor's error codes
 *   and outside -55..125 °C
 *
 * Bounds beyond these are the judgement's (the same code as `POST /readings`), not this mapping's.
 */
export function recordToReading(record: AvlRecord): Record<string, unknown> | null {
  if (!(record.timestamp <= MAX_DATE_MS)) return null;
  const reading: Record<string, unknown> = { recordedAt: new Date(record.timestamp).toISOString() };
  let measured = false;

  const hasFix = record.satellites > 0 && !(record.latitude === 0 && record.longitude === 0);
  if (hasFix) {
    reading.location = {
      lat: record.latitude / 1e7,
      lng: record.longitude / 1e7,
      altitudeMeters: record.altitude,
      speedMps: record.speed / 3.6,
      headingDegrees: record.angle,
    };
    measured = true;
  } else {
    reading.location = null;
  }

  const battery = findIo(record, IO_BATTERY_LEVEL);
  if (battery !== undefined) {
    const percent = unsignedOf(battery);
    if (percent !== undefined && percent <= 100) {
      reading.batteryPercent = percent;
      measured = true;
    }
  }

  const dallas = findIo(record, IO_DALLAS_TEMPERATURE_1);
  if (dallas !== undefined) {
    const raw = signedOf(dallas);
    if (raw !== undefined && !DALLAS_ERROR_CODES.has(raw)) {
      const celsius = raw / 10;
      if (celsius >= DALLAS_MIN_C && celsius <= DALLAS_MAX_C) {
        reading.temperatureC = celsius;
        measured = true;
      }
    }
  }

  return measured ? reading : null;
}

function findIo(record: AvlRecord, id: number): AvlIo | undefined {
  for (const io of record.io) if (io.id === id) return io;
  return undefined;
}

function unsignedOf(io: AvlIo): number | undefined {
  if (typeof io.value === 'number') return io.value;
  if (typeof io.value === 'bigint') return io.value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(io.value) : undefined;
  return undefined;
}

/** The value as a two's-complement number of its own width (Teltonika sends signed values that way). */
function signedOf(io: AvlIo): number | undefined {
  if (typeof io.value === 'bigint') return Number(BigInt.asIntN(64, io.value));
  if (typeof io.value !== 'number') return undefined;
  switch (io.size) {
    case 1:
      return (io.value << 24) >> 24;
    case 2:
      return (io.value << 16) >> 16;
    case 4:
      return io.value | 0;
    default:
      return undefined;
  }
}
