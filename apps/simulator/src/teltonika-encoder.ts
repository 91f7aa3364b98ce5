/**
 * What a Teltonika tracker sends, for the simulator's Teltonika sender: the IMEI handshake and Codec 8 AVL
 * packets (Teltonika's "Data Sending Protocols", Codec 8). Encoding only, and only what the simulator's
 * records hold.
 *
 * Duplicated on purpose from the device gateway's codec (`apps/device-gateway/src/teltonika/teltonika-codec.ts`,
 * `encodeHandshake`, `encodeAvlPacket`, `crc16Ibm`): the simulator is a client of the system and may import
 * only the SDK (the `type:tool` boundary), and the simulator must not share code with the server it checks,
 * or a mistake in the shared encoding would be invisible to both. The spec beside this file compares the
 * bytes against Teltonika's published example, as the gateway's decoder spec does.
 */

/** Codec 8's id in a packet. */
export const CODEC_8 = 0x08;

/** One IO element; Codec 8 has values of 1, 2, 4 and 8 bytes (unsigned on the wire: signed values go in two's complement). */
export interface AvlIo {
  id: number;
  size: 1 | 2 | 4 | 8;
  value: number | bigint;
}

/** One AVL record as Codec 8 carries it. */
export interface AvlRecord {
  /** Milliseconds since the Unix epoch, UTC. */
  timestamp: number;
  priority: number;
  /** Degrees times 10^7, signed. */
  longitude: number;
  latitude: number;
  /** Metres, signed. */
  altitude: number;
  /** Heading, degrees from north. */
  angle: number;
  /** 0 means no fix. */
  satellites: number;
  /** km/h. */
  speed: number;
  eventIoId: number;
  io: AvlIo[];
}

/** Teltonika's AVL IO ids the gateway stores (docs/protocols/teltonika.md). */
export const IO_BATTERY_PERCENT = 113;
export const IO_DALLAS_TEMPERATURE_1 = 72;

/** The device's first message: 2 bytes of length, then the IMEI in ASCII. */
export function encodeHandshake(imei: string): Buffer {
  if (!/^\d{15}$/.test(imei)) throw new RangeError(`an IMEI is 15 digits (got ${imei})`);
  const out = Buffer.alloc(2 + imei.length);
  out.writeUInt16BE(imei.length, 0);
  out.write(imei, 2, 'latin1');
  return out;
}

/**
 * One Codec 8 packet: 4 zero bytes, the data length, then codec id, record count, the records, the count
 * again, and the CRC-16/IBM of that data in 4 bytes. The server answers the record count in 4 bytes.
 */
export function encodeCodec8Packet(records: readonly AvlRecord[]): Buffer {
  if (records.length < 1 || records.length > 255) throw new RangeError('a Codec 8 packet holds 1 to 255 records');
  const parts: Buffer[] = [Buffer.from([CODEC_8, records.length])];
  for (const record of records) {
    const head = Buffer.alloc(24);
    head.writeBigUInt64BE(BigInt(record.timestamp), 0);
    head.writeUInt8(record.priority, 8);
    head.writeInt32BE(record.longitude, 9);
    head.writeInt32BE(record.latitude, 13);
    head.writeInt16BE(record.altitude, 17);
    head.writeUInt16BE(record.angle, 19);
    head.writeUInt8(record.satellites, 21);
    head.writeUInt16BE(record.speed, 22);
    parts.push(head, Buffer.from([record.eventIoId, record.io.length]));
    for (const size of [1, 2, 4, 8] as const) {
      const group = record.io.filter((io) => io.size === size);
      parts.push(Buffer.from([group.length]));
      for (const io of group) {
        const value = Buffer.alloc(size);
        if (size === 8) value.writeBigUInt64BE(BigInt.asUintN(64, BigInt(io.value)), 0);
        else value.writeUIntBE(Number(BigInt.asUintN(size * 8, BigInt(io.value))), 0, size);
        parts.push(Buffer.from([io.id]), value);
      }
    }
  }
  parts.push(Buffer.from([records.length]));
  const data = Buffer.concat(parts);
  const header = Buffer.alloc(8);
  header.writeUInt32BE(data.length, 4);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc16Ibm(data), 0);
  return Buffer.concat([header, data, crc]);
}

/** CRC-16/IBM (CRC-16/ARC): polynomial 0x8005 reflected (0xA001), initial value 0, no final XOR. */
export function crc16Ibm(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}

/** A 15-digit IMEI with a valid Luhn check digit: `prefix` (a type allocation code) and random digits. */
export function randomImei(prefix = '35630704', random: () => number = Math.random): string {
  let body = prefix;
  while (body.length < 14) body += String(Math.floor(random() * 10));
  return body + luhnDigit(body);
}

function luhnDigit(digits: string): string {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    // From the right of the full number, every second digit (starting with the one before the check digit) doubles.
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return String((10 - (sum % 10)) % 10);
}
