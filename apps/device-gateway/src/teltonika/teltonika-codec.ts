/**
 * Teltonika's TCP framing and its AVL codecs 8 (0x08) and 8 Extended (0x8E), written from Teltonika's
 * public protocol description ("Teltonika Data Sending Protocols" on Teltonika's wiki). Pure functions
 * and one byte accumulator, no I/O: the listener feeds it what the socket reads.
 *
 * Hand-written on purpose: npm has no well-kept library for it. Its two parsers are 0.x one-author
 * packages: complete-teltonika-parser decodes one whole packet given as a hex string (no framing of a
 * TCP stream, the length field unused, plain `Error`s), teltonika-parser is at 0.0.15. What a listener
 * facing the internet needs is the part they lack: a stream framer that refuses a hostile length before
 * buffering it, and typed faults for each way a packet is wrong. The format itself is a few fixed-width
 * big-endian fields, so this file owns bounds on every read.
 *
 * A packet on the wire:
 *   4 bytes 0x00000000 preamble | 4 bytes data length | codec id | N1 (record count) | records | N2 | 4 bytes CRC
 * The data length counts codec id .. N2; the CRC-16/IBM covers the same bytes, in the low half of the
 * 4-byte field. Codec 8: IO ids and counts 1 byte. Codec 8 Extended: 2 bytes, plus variable-length (NX)
 * IO values with a 2-byte length.
 */

export const CODEC_8 = 0x08;
export const CODEC_8_EXTENDED = 0x8e;

/** The length field of an IMEI handshake: Teltonika sends the 15-digit IMEI as ASCII. */
const IMEI_LENGTH = 15;
const HANDSHAKE_BYTES = 2 + IMEI_LENGTH;
/** Preamble and data length. */
const HEADER_BYTES = 8;
const CRC_BYTES = 4;
/** Codec id, N1, one record with no IO at all (Codec 8: 8+1+15+1+1+4 = 30), N2. */
const MIN_DATA_LENGTH = 1 + 1 + 30 + 1;

/**
 * The largest data length accepted, by default. Teltonika documents AVL packets of at most 1280 bytes
 * (512 for FMB6xx); Codec 8 Extended with NX values (BLE beacons, VIN) runs larger. 64 KiB leaves room for
 * those and keeps a connection's buffer bounded whatever length a hostile client announces.
 */
export const DEFAULT_MAX_DATA_LENGTH = 64 * 1024;

/** Why a handshake or a packet is refused. Each is a protocol violation: the connection is closed. */
export type TeltonikaFault =
  | 'BadHandshake'
  | 'BadPreamble'
  | 'LengthOutOfRange'
  | 'BadCrc'
  | 'UnsupportedCodec'
  | 'RecordCountMismatch'
  | 'NoRecords'
  | 'Truncated'
  | 'TrailingBytes';

export class TeltonikaProtocolError extends Error {
  constructor(
    readonly fault: TeltonikaFault,
    message: string,
  ) {
    super(message);
    this.name = 'TeltonikaProtocolError';
  }
}

/**
 * CRC-16/IBM (also called CRC-16/ARC): polynomial 0x8005 reflected (0xA001), initial value 0, no final
 * XOR, as Teltonika specifies for the AVL packet.
 */
export function crc16Ibm(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let crc = 0;
  for (let i = start; i < end; i++) crc = (crc >>> 8) ^ (CRC_TABLE[(crc ^ (bytes[i] ?? 0)) & 0xff] ?? 0);
  return crc;
}

/** The CRC of each byte value, one table lookup per byte instead of eight shifts (a fifth of the decode time). */
const CRC_TABLE = Uint16Array.from({ length: 256 }, (_, byte) => {
  let crc = byte;
  for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  return crc;
});

export type HandshakeResult =
  | { kind: 'incomplete' }
  | { kind: 'imei'; imei: string; consumed: number }
  | { kind: 'invalid'; reason: string };

/**
 * The device's first message: a 2-byte length (15) and the IMEI's 15 ASCII digits. Anything else in
 * the first bytes (a port scanner, an HTTP request, another protocol) is invalid as soon as it shows.
 */
export function parseHandshake(bytes: Uint8Array): HandshakeResult {
  if (bytes.length >= 1 && bytes[0] !== 0) return { kind: 'invalid', reason: 'the handshake length is not 15' };
  if (bytes.length >= 2 && bytes[1] !== IMEI_LENGTH) return { kind: 'invalid', reason: 'the handshake length is not 15' };
  const available = Math.min(bytes.length, HANDSHAKE_BYTES);
  for (let i = 2; i < available; i++) {
    const byte = bytes[i] ?? 0;
    if (byte < 0x30 || byte > 0x39) return { kind: 'invalid', reason: 'the IMEI is not 15 ASCII digits' };
  }
  if (bytes.length < HANDSHAKE_BYTES) return { kind: 'incomplete' };
  return { kind: 'imei', imei: Buffer.from(bytes.subarray(2, HANDSHAKE_BYTES)).toString('latin1'), consumed: HANDSHAKE_BYTES };
}

/** The handshake as a device sends it (tests and the benchmark build theirs with it). */
export function encodeHandshake(imei: string): Buffer {
  const out = Buffer.alloc(2 + imei.length);
  out.writeUInt16BE(imei.length, 0);
  out.write(imei, 2, 'latin1');
  return out;
}

/**
 * Gathers the bytes of a TCP stream into whole AVL packets: a packet split across reads waits for its
 * rest, several packets in one read come out one by one. The announced length is checked before any
 * of the packet is kept, so a hostile length costs at most `maxDataLength` bytes of buffer.
 */
export class AvlPacketReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly maxDataLength = DEFAULT_MAX_DATA_LENGTH) {}

  /** Bytes held that are not yet a whole packet. */
  get pendingBytes(): number {
    return this.buffered;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  /**
   * The next whole packet (preamble to CRC, not yet checked beyond its header), `null` while it is
   * incomplete. Throws `TeltonikaProtocolError` when the header is already wrong.
   */
  next(): Buffer | null {
    if (this.buffered < HEADER_BYTES) {
      this.checkPreamble();
      return null;
    }
    const header = this.peek(HEADER_BYTES);
    if (header.readUInt32BE(0) !== 0) throw new TeltonikaProtocolError('BadPreamble', 'an AVL packet starts with four zero bytes');
    const dataLength = header.readUInt32BE(4);
    if (dataLength < MIN_DATA_LENGTH || dataLength > this.maxDataLength) {
      throw new TeltonikaProtocolError('LengthOutOfRange', `data length ${dataLength} is outside ${MIN_DATA_LENGTH}..${this.maxDataLength}`);
    }
    const total = HEADER_BYTES + dataLength + CRC_BYTES;
    if (this.buffered < total) return null;
    return this.take(total);
  }

  /** The preamble's bytes so far must be zero: garbage is refused before it is buffered further. */
  private checkPreamble(): void {
    let seen = 0;
    for (const chunk of this.chunks) {
      for (let i = 0; i < chunk.length && seen < 4; i++, seen++) {
        if (chunk[i] !== 0) throw new TeltonikaProtocolError('BadPreamble', 'an AVL packet starts with four zero bytes');
      }
      if (seen >= 4) return;
    }
  }

  /** The first `length` bytes held (the caller checked that there are that many), joined into one chunk. */
  private first(length: number): Buffer {
    const first = this.chunks[0];
    if (first && first.length >= length) return first;
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined;
  }

  private peek(length: number): Buffer {
    return this.first(length).subarray(0, length);
  }

  private take(length: number): Buffer {
    const first = this.first(length);
    const packet = first.subarray(0, length);
    if (first.length === length) this.chunks.shift();
    else this.chunks[0] = first.subarray(length);
    this.buffered -= length;
    return packet;
  }
}

/** One IO element of a record. Values of 1, 2 and 4 bytes are unsigned numbers, 8 bytes a bigint, NX the bytes. */
export interface AvlIo {
  id: number;
  /** 1, 2, 4 or 8; 0 for a variable-length (NX) value. */
  size: 0 | 1 | 2 | 4 | 8;
  value: number | bigint | Buffer;
}

export interface AvlRecord {
  /** Milliseconds since the Unix epoch, UTC. */
  timestamp: number;
  priority: number;
  /** Degrees times 10^7, signed. */
  longitude: number;
  latitude: number;
  /** Metres, signed. */
  altitude: number;
  /** Degrees from north, 0..360. */
  angle: number;
  satellites: number;
  /** km/h. */
  speed: number;
  eventIoId: number;
  io: AvlIo[];
}

export interface AvlPacket {
  codec: typeof CODEC_8 | typeof CODEC_8_EXTENDED;
  records: AvlRecord[];
  /** The count the device expects back in the acknowledgement. */
  recordCount: number;
}

/**
 * Decodes one whole packet as `AvlPacketReader.next` returns it: checks the preamble, the length, the
 * CRC, the codec, both record counts and that the records fill the data exactly. Throws
 * `TeltonikaProtocolError` on the first fault.
 */
export function decodeAvlPacket(packet: Buffer): AvlPacket {
  if (packet.length < HEADER_BYTES + CRC_BYTES) throw new TeltonikaProtocolError('Truncated', 'shorter than a packet header');
  if (packet.readUInt32BE(0) !== 0) throw new TeltonikaProtocolError('BadPreamble', 'an AVL packet starts with four zero bytes');
  const dataLength = packet.readUInt32BE(4);
  if (dataLength < MIN_DATA_LENGTH || packet.length !== HEADER_BYTES + dataLength + CRC_BYTES) {
    throw new TeltonikaProtocolError('LengthOutOfRange', `data length ${dataLength} does not match the packet's ${packet.length} bytes`);
  }
  const dataEnd = HEADER_BYTES + dataLength;
  const expectedCrc = packet.readUInt32BE(dataEnd);
  const actualCrc = crc16Ibm(packet, HEADER_BYTES, dataEnd);
  if (expectedCrc !== actualCrc) {
    throw new TeltonikaProtocolError('BadCrc', `CRC ${hex4(expectedCrc)} announced, ${hex4(actualCrc)} computed`);
  }
  const codec = packet.readUInt8(HEADER_BYTES);
  if (codec !== CODEC_8 && codec !== CODEC_8_EXTENDED) {
    throw new TeltonikaProtocolError('UnsupportedCodec', `codec 0x${codec.toString(16).padStart(2, '0')} is not Codec 8 (0x08) or Codec 8 Extended (0x8E)`);
  }
  const count1 = packet.readUInt8(HEADER_BYTES + 1);
  const count2 = packet.readUInt8(dataEnd - 1);
  if (count1 !== count2) throw new TeltonikaProtocolError('RecordCountMismatch', `record counts ${count1} and ${count2} differ`);
  if (count1 === 0) throw new TeltonikaProtocolError('NoRecords', 'a packet without records');

  const cursor = new Cursor(packet, HEADER_BYTES + 2, dataEnd - 1);
  const records: AvlRecord[] = [];
  for (let i = 0; i < count1; i++) records.push(readRecord(cursor, codec === CODEC_8_EXTENDED));
  if (cursor.offset !== cursor.end) {
    throw new TeltonikaProtocolError('TrailingBytes', `${cursor.end - cursor.offset} bytes after ${count1} records`);
  }
  return { codec, records, recordCount: count1 };
}

/** The 4-byte acknowledgement of a packet: the number of records accepted, big-endian. */
export function encodeAck(recordCount: number): Buffer {
  const ack = Buffer.alloc(4);
  ack.writeUInt32BE(recordCount, 0);
  return ack;
}

/** Reads within [offset, end), refusing to read past `end`. */
class Cursor {
  constructor(
    private readonly bytes: Buffer,
    public offset: number,
    readonly end: number,
  ) {}

  private claim(length: number): number {
    const at = this.offset;
    if (at + length > this.end) throw new TeltonikaProtocolError('Truncated', `a record needs ${length} bytes at ${at}, the data ends at ${this.end}`);
    this.offset = at + length;
    return at;
  }

  u8(): number {
    return this.bytes.readUInt8(this.claim(1));
  }

  u16(): number {
    return this.bytes.readUInt16BE(this.claim(2));
  }

  i16(): number {
    return this.bytes.readInt16BE(this.claim(2));
  }

  u32(): number {
    return this.bytes.readUInt32BE(this.claim(4));
  }

  i32(): number {
    return this.bytes.readInt32BE(this.claim(4));
  }

  u64(): bigint {
    return this.bytes.readBigUInt64BE(this.claim(8));
  }

  bytesOf(length: number): Buffer {
    const at = this.claim(length);
    return this.bytes.subarray(at, at + length);
  }
}

function readRecord(cursor: Cursor, extended: boolean): AvlRecord {
  const timestamp = Number(cursor.u64());
  const priority = cursor.u8();
  const longitude = cursor.i32();
  const latitude = cursor.i32();
  const altitude = cursor.i16();
  const angle = cursor.u16();
  const satellites = cursor.u8();
  const speed = cursor.u16();
  const count = extended ? () => cursor.u16() : () => cursor.u8();
  const eventIoId = count();
  const total = count();
  const io: AvlIo[] = [];
  for (const size of [1, 2, 4, 8] as const) {
    const n = count();
    for (let i = 0; i < n; i++) {
      const id = count();
      const value = size === 1 ? cursor.u8() : size === 2 ? cursor.u16() : size === 4 ? cursor.u32() : cursor.u64();
      io.push({ id, size, value });
    }
  }
  if (extended) {
    const n = cursor.u16();
    for (let i = 0; i < n; i++) {
      const id = cursor.u16();
      const length = cursor.u16();
      io.push({ id, size: 0, value: cursor.bytesOf(length) });
    }
  }
  // The total repeats the sum of the groups' counts. It is not checked: the groups alone delimit the
  // record and the CRC already guards the bytes, so a device whose firmware miscounts would otherwise be
  // cut off with records it cannot send any differently.
  void total;
  return { timestamp, priority, longitude, latitude, altitude, angle, satellites, speed, eventIoId, io };
}

function hex4(value: number): string {
  return `0x${value.toString(16).padStart(4, '0')}`;
}

/**
 * Encodes a packet as a device would (tests and the benchmark speak to the listener with it). IO values
 * are written in the width their `size` says; NX values (`size` 0, Codec 8 Extended only) with their length.
 */
export function encodeAvlPacket(codec: AvlPacket['codec'], records: AvlRecord[]): Buffer {
  const extended = codec === CODEC_8_EXTENDED;
  const parts: Buffer[] = [Buffer.from([codec, records.length])];
  const count = (n: number) => {
    const b = Buffer.alloc(extended ? 2 : 1);
    if (extended) b.writeUInt16BE(n, 0);
    else b.writeUInt8(n, 0);
    return b;
  };
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
    parts.push(head, count(record.eventIoId), count(record.io.length));
    for (const size of [1, 2, 4, 8] as const) {
      const group = record.io.filter((io) => io.size === size);
      parts.push(count(group.length));
      for (const io of group) {
        const value = Buffer.alloc(size);
        if (size === 8) value.writeBigUInt64BE(BigInt(io.value as number | bigint), 0);
        else value.writeUIntBE(Number(io.value), 0, size);
        parts.push(count(io.id), value);
      }
    }
    if (extended) {
      const group = record.io.filter((io) => io.size === 0);
      parts.push(count(group.length));
      for (const io of group) {
        const value = io.value as Buffer;
        parts.push(count(io.id), count(value.length), value);
      }
    }
  }
  parts.push(Buffer.from([records.length]));
  const data = Buffer.concat(parts);
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32BE(data.length, 4);
  const crc = Buffer.alloc(CRC_BYTES);
  crc.writeUInt32BE(crc16Ibm(data), 0);
  return Buffer.concat([header, data, crc]);
}
