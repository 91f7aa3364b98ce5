import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  AvlPacketReader,
  CODEC_8,
  CODEC_8_EXTENDED,
  crc16Ibm,
  decodeAvlPacket,
  encodeAck,
  encodeAvlPacket,
  encodeHandshake,
  parseHandshake,
  type AvlRecord,
  TeltonikaProtocolError,
} from './teltonika-codec.js';

/** Published and captured frames, each with its source (teltonika-frames.fixture.json). */
const FRAMES = JSON.parse(readFileSync(new URL('./teltonika-frames.fixture.json', import.meta.url), 'utf8')) as {
  handshakes: { name: string; hex: string; imei: string }[];
  packets: { name: string; hex: string; codec: string; records: number }[];
  refused: { name: string; hex: string; fault: string }[];
};
const frame = (name: string) =>
  Buffer.from([...FRAMES.handshakes, ...FRAMES.packets, ...FRAMES.refused].find((entry) => entry.name === name)!.hex, 'hex');

function faultOf(action: () => unknown): string | undefined {
  try {
    action();
  } catch (error) {
    if (error instanceof TeltonikaProtocolError) return error.fault;
    throw error;
  }
  return undefined;
}

/** A record with a fix and the two IO elements the mapping reads; overrides for the case at hand. */
function record(overrides: Partial<AvlRecord> = {}): AvlRecord {
  return {
    timestamp: Date.UTC(2026, 10, 27, 8, 0, 0, 123),
    priority: 1,
    longitude: 253032016,
    latitude: 547146368,
    altitude: 111,
    angle: 214,
    satellites: 7,
    speed: 36,
    eventIoId: 0,
    io: [
      { id: 113, size: 1, value: 87 },
      { id: 72, size: 4, value: 215 },
    ],
    ...overrides,
  };
}

describe('crc16Ibm', () => {
  it('is CRC-16/IBM (ARC): the standard check value of "123456789" is 0xBB3D', () => {
    expect(crc16Ibm(Buffer.from('123456789', 'ascii'))).toBe(0xbb3d);
  });
});

describe('parseHandshake', () => {
  it.each(FRAMES.handshakes.map((entry) => [entry.name, entry.hex, entry.imei]))('reads the IMEI of %s', (_name, hex, imei) => {
    expect(parseHandshake(Buffer.from(hex, 'hex'))).toEqual({ kind: 'imei', imei, consumed: 17 });
  });

  it('waits for the rest of a handshake split across reads', () => {
    const whole = frame('wiki-imei');
    for (let cut = 0; cut < whole.length; cut++) expect(parseHandshake(whole.subarray(0, cut))).toEqual({ kind: 'incomplete' });
  });

  it('leaves the bytes after the IMEI to the packet reader', () => {
    const bytes = Buffer.concat([frame('wiki-imei'), frame('wiki-codec8-1')]);
    expect(parseHandshake(bytes)).toMatchObject({ kind: 'imei', consumed: 17 });
  });

  it.each([
    ['an HTTP request', Buffer.from('GET / HTTP/1.1\r\n\r\n')],
    ['garbage before the IMEI', Buffer.concat([Buffer.from([0xff]), frame('wiki-imei')])],
    ['a length other than 15', Buffer.from('000E3335363330373034323434313031', 'hex')],
    ['a non-digit in the IMEI', Buffer.from('000F33353633303730343234343130313A', 'hex')],
    ['an AVL packet instead of a handshake', frame('wiki-codec8-1')],
  ])('refuses %s as soon as it shows', (_case, bytes) => {
    expect(parseHandshake(bytes).kind).toBe('invalid');
    // Refused on its first wrong byte, without waiting for 17 bytes.
    const firstWrong = [...bytes.subarray(0, 17)].findIndex((byte, i) => (i === 0 ? byte !== 0 : i === 1 ? byte !== 15 : byte < 0x30 || byte > 0x39));
    expect(parseHandshake(bytes.subarray(0, firstWrong + 1)).kind).toBe('invalid');
  });

  it('round-trips encodeHandshake', () => {
    expect(encodeHandshake('356307042441013')).toEqual(frame('wiki-imei'));
  });
});

describe('decodeAvlPacket: Teltonika wiki examples, decoded values as the wiki gives them', () => {
  it('Codec 8, 1st example: one record without fix, IO of every width', () => {
    const packet = decodeAvlPacket(frame('wiki-codec8-1'));
    expect(packet.codec).toBe(CODEC_8);
    expect(packet.recordCount).toBe(1);
    expect(packet.records).toEqual([
      {
        timestamp: 1560161086000, // 2019-06-10T10:04:46Z
        priority: 1,
        longitude: 0,
        latitude: 0,
        altitude: 0,
        angle: 0,
        satellites: 0,
        speed: 0,
        eventIoId: 1,
        io: [
          { id: 21, size: 1, value: 3 },
          { id: 1, size: 1, value: 1 },
          { id: 66, size: 2, value: 0x5e0f },
          { id: 241, size: 4, value: 0x601a },
          { id: 78, size: 8, value: 0n },
        ],
      },
    ]);
  });

  it('Codec 8, 2nd example', () => {
    const packet = decodeAvlPacket(frame('wiki-codec8-2'));
    expect(packet.recordCount).toBe(1);
    expect(packet.records[0]).toMatchObject({ timestamp: 1560161136000, priority: 1, eventIoId: 1 });
    expect(packet.records[0]!.io).toEqual([
      { id: 21, size: 1, value: 3 },
      { id: 1, size: 1, value: 1 },
      { id: 66, size: 2, value: 0x5e10 },
    ]);
  });

  it('Codec 8, 3rd example: two records', () => {
    const packet = decodeAvlPacket(frame('wiki-codec8-3'));
    expect(packet.recordCount).toBe(2);
    expect(packet.records.map((r) => [r.timestamp, r.eventIoId, r.io])).toEqual([
      [1560160861000, 1, [{ id: 1, size: 1, value: 0 }]],
      [1560160879000, 1, [{ id: 1, size: 1, value: 1 }]],
    ]);
  });

  it('Codec 8 Extended example: 2-byte ids and counts', () => {
    const packet = decodeAvlPacket(frame('wiki-codec8e'));
    expect(packet.codec).toBe(CODEC_8_EXTENDED);
    expect(packet.recordCount).toBe(1);
    expect(packet.records[0]).toMatchObject({ timestamp: 1560166592000, priority: 1, satellites: 0, eventIoId: 1 });
    expect(packet.records[0]!.io).toEqual([
      { id: 1, size: 1, value: 1 },
      { id: 17, size: 2, value: 0x1d },
      { id: 16, size: 4, value: 0x015e2c88 },
      { id: 11, size: 8, value: 0x3544c87an },
      { id: 14, size: 8, value: 0x1dd7e06an },
    ]);
  });

  it("Teltonika's FM protocol example: four records with a fix, out of time order", () => {
    const packet = decodeAvlPacket(frame('fm-protocol-4'));
    expect(packet.recordCount).toBe(4);
    expect(packet.records[0]).toEqual({
      timestamp: 0x113fc208dff, // 2007-07-25T06:46:38.335Z
      priority: 0,
      longitude: 253032016, // 25.3032016°
      latitude: 547146368, // 54.7146368°
      altitude: 111,
      angle: 214,
      satellites: 4,
      speed: 4,
      eventIoId: 0,
      io: [
        { id: 1, size: 1, value: 1 },
        { id: 21, size: 1, value: 3 },
        { id: 22, size: 1, value: 3 },
        { id: 70, size: 4, value: 349 },
      ],
    });
    expect(packet.records.map((r) => r.timestamp)).toEqual([0x113fc208dff, 0x113fc17610b, 0x113fc284945, 0x113fc267c5b]);
  });
});

describe('decodeAvlPacket: frames captured from devices (Traccar test data)', () => {
  const captured = FRAMES.packets.filter((entry) => entry.name.startsWith('traccar-'));

  it('has captured frames of both codecs', () => {
    expect(captured.filter((entry) => entry.codec === '0x08').length).toBeGreaterThanOrEqual(10);
    expect(captured.filter((entry) => entry.codec === '0x8E').length).toBeGreaterThanOrEqual(4);
  });

  it.each(captured.map((entry) => [entry.name, entry.hex, entry.codec, entry.records] as const))(
    '%s parses, its CRC passes and its record count matches',
    (_name, hex, codec, records) => {
      const bytes = Buffer.from(hex, 'hex');
      const dataLength = bytes.readUInt32BE(4);
      expect(bytes.readUInt32BE(8 + dataLength)).toBe(crc16Ibm(bytes, 8, 8 + dataLength));
      const packet = decodeAvlPacket(bytes);
      expect(packet.codec).toBe(Number(codec));
      expect(packet.recordCount).toBe(records);
      expect(packet.records).toHaveLength(records);
      for (const r of packet.records) {
        expect(Number.isSafeInteger(r.timestamp)).toBe(true);
        expect(Math.abs(r.latitude)).toBeLessThanOrEqual(90e7);
        expect(Math.abs(r.longitude)).toBeLessThanOrEqual(180e7);
      }
    },
  );

  it('reads variable-length (NX) IO values of Codec 8 Extended', () => {
    const packet = decodeAvlPacket(frame('traccar-6'));
    const nx = packet.records[0]!.io.filter((io) => io.size === 0);
    expect(nx).toHaveLength(1);
    expect(nx[0]!.id).toBe(0x100);
    expect((nx[0]!.value as Buffer).toString('latin1')).toBe('1A1JC5444R7252367'); // a VIN
  });
});

describe('decodeAvlPacket: refused frames', () => {
  it.each(FRAMES.refused.map((entry) => [entry.name, entry.hex, entry.fault]))('%s is refused (%s)', (_name, hex, fault) => {
    expect(faultOf(() => decodeAvlPacket(Buffer.from(hex, 'hex')))).toBe(fault);
  });

  it('refuses a flipped bit anywhere in the data by its CRC', () => {
    const good = frame('wiki-codec8e');
    for (let at = 8; at < good.length - 4; at++) {
      const bad = Buffer.from(good);
      bad[at]! ^= 0x10;
      expect(faultOf(() => decodeAvlPacket(bad))).toBe('BadCrc');
    }
  });

  it('refuses a wrong codec with a valid CRC', () => {
    const data = Buffer.from(frame('wiki-codec8-1'));
    data[8] = 0x10;
    data.writeUInt32BE(crc16Ibm(data, 8, data.length - 4), data.length - 4);
    expect(faultOf(() => decodeAvlPacket(data))).toBe('UnsupportedCodec');
  });

  it('refuses record counts that differ (CRC recomputed, so only the counts are wrong)', () => {
    const data = Buffer.from(frame('wiki-codec8-3'));
    data[data.length - 5] = 3;
    data.writeUInt32BE(crc16Ibm(data, 8, data.length - 4), data.length - 4);
    expect(faultOf(() => decodeAvlPacket(data))).toBe('RecordCountMismatch');
  });

  it('refuses counts that claim more records than the data holds', () => {
    const data = Buffer.from(frame('wiki-codec8-3'));
    data[9] = 3;
    data[data.length - 5] = 3;
    data.writeUInt32BE(crc16Ibm(data, 8, data.length - 4), data.length - 4);
    expect(faultOf(() => decodeAvlPacket(data))).toBe('Truncated');
  });

  it('refuses counts that claim fewer records than the data holds', () => {
    const data = Buffer.from(frame('wiki-codec8-3'));
    data[9] = 1;
    data[data.length - 5] = 1;
    data.writeUInt32BE(crc16Ibm(data, 8, data.length - 4), data.length - 4);
    expect(faultOf(() => decodeAvlPacket(data))).toBe('TrailingBytes');
  });

  it('refuses a packet of zero records', () => {
    const data = encodeAvlPacket(CODEC_8, [record()]);
    data[9] = 0;
    data[data.length - 5] = 0;
    data.writeUInt32BE(crc16Ibm(data, 8, data.length - 4), data.length - 4);
    expect(faultOf(() => decodeAvlPacket(data))).toBe('NoRecords');
  });

  it('refuses an IO group whose count runs past the data', () => {
    const data = encodeAvlPacket(CODEC_8_EXTENDED, [record({ io: [{ id: 300, size: 0, value: Buffer.from('abc') }] })]);
    // The NX value's length field (2 bytes before the 3 value bytes, before N2 and the CRC) says 200.
    data.writeUInt16BE(200, data.length - 4 - 1 - 3 - 2);
    data.writeUInt32BE(crc16Ibm(data, 8, data.length - 4), data.length - 4);
    expect(faultOf(() => decodeAvlPacket(data))).toBe('Truncated');
  });
});

describe('encodeAvlPacket', () => {
  it.each([CODEC_8, CODEC_8_EXTENDED] as const)('round-trips through decodeAvlPacket (codec 0x%s)', (codec) => {
    const records = [
      record(),
      record({ timestamp: 1, longitude: -1234567890, latitude: -899999999, altitude: -20, io: [{ id: 78, size: 8, value: 2n ** 63n }] }),
    ];
    if (codec === CODEC_8_EXTENDED) records[1]!.io.push({ id: 385, size: 0, value: Buffer.from('beacon') });
    expect(decodeAvlPacket(encodeAvlPacket(codec, records)).records).toEqual(records);
  });

  it('encodes the acknowledgement as a 4-byte big-endian count', () => {
    expect(encodeAck(10)).toEqual(Buffer.from([0, 0, 0, 10]));
  });
});

describe('AvlPacketReader', () => {
  const packets = FRAMES.packets.map((entry) => Buffer.from(entry.hex, 'hex'));
  const stream = Buffer.concat(packets);

  function readAll(reader: AvlPacketReader): Buffer[] {
    const out: Buffer[] = [];
    for (let next = reader.next(); next; next = reader.next()) out.push(Buffer.from(next));
    return out;
  }

  it('returns each packet of a stream whole, at every chunk size', () => {
    for (const size of [1, 2, 3, 7, 13, 64, 500, stream.length]) {
      const reader = new AvlPacketReader();
      const out: Buffer[] = [];
      for (let at = 0; at < stream.length; at += size) {
        reader.push(stream.subarray(at, at + size));
        out.push(...readAll(reader));
      }
      expect(out).toEqual(packets);
      expect(reader.pendingBytes).toBe(0);
    }
  });

  it('returns several packets that arrive in one chunk one by one', () => {
    const reader = new AvlPacketReader();
    reader.push(Buffer.concat([packets[0]!, packets[1]!, packets[2]!.subarray(0, 20)]));
    expect(reader.next()).toEqual(packets[0]);
    expect(reader.next()).toEqual(packets[1]);
    expect(reader.next()).toBeNull();
    expect(reader.pendingBytes).toBe(20);
  });

  it('waits for the rest of a truncated packet', () => {
    const truncated = new AvlPacketReader();
    truncated.push(frame('traccar-truncated'));
    expect(truncated.next()).toBeNull();
    // The 4-record example with the last two bytes of its CRC missing: whole once they come.
    const cut = new AvlPacketReader();
    cut.push(frame('traccar-crc-cut'));
    expect(cut.next()).toBeNull();
    cut.push(Buffer.from('BA48', 'hex'));
    expect(cut.next()).toEqual(frame('fm-protocol-4'));
  });

  it('refuses a hostile length before buffering the packet', () => {
    const reader = new AvlPacketReader(64 * 1024);
    reader.push(Buffer.from('00000000FFFFFFFF', 'hex'));
    expect(faultOf(() => reader.next())).toBe('LengthOutOfRange');
    const justOver = new AvlPacketReader(1000);
    justOver.push(Buffer.from('00000000000003E9', 'hex'));
    expect(faultOf(() => justOver.next())).toBe('LengthOutOfRange');
    const atCap = new AvlPacketReader(1000);
    atCap.push(Buffer.from('00000000000003E8', 'hex'));
    expect(atCap.next()).toBeNull();
  });

  it('refuses a length too short for one record', () => {
    const reader = new AvlPacketReader();
    reader.push(frame('traccar-zero-length'));
    expect(faultOf(() => reader.next())).toBe('LengthOutOfRange');
  });

  it('refuses garbage on its first non-zero preamble byte', () => {
    const reader = new AvlPacketReader();
    reader.push(Buffer.from([0, 0, 0x47]));
    expect(faultOf(() => reader.next())).toBe('BadPreamble');
    const http = new AvlPacketReader();
    http.push(Buffer.from('GET / HTTP/1.1\r\n'));
    expect(faultOf(() => http.next())).toBe('BadPreamble');
  });
});
