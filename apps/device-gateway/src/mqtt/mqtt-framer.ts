/**
 * Cuts the byte stream of one MQTT connection into whole control packets, and refuses a packet whose
 * announced size is over the limit as soon as its fixed header arrived: before a single byte of its
 * body is buffered.
 *
 * Hand-written (about 80 lines) because mqtt-packet's parser, which decodes each frame afterwards,
 * buffers any announced length in full and has no size limit; a device that has not even
 * authenticated could otherwise make us hold 256 MB (the largest length MQTT can announce).
 *
 * An oversized PUBLISH is not buffered but skipped, keeping only its head (topic and packet id), so an
 * MQTT 3.1.1 device, which cannot learn our limit, gets its PUBACK and does not resend it forever.
 */

/** What the framer found in the stream. */
export type Frame =
  | { kind: 'packet'; bytes: Buffer }
  /**
   * A packet over the limit. When skipping, `head` holds the first bytes of its body (up to
   * `headBytes`) and the rest was dropped; otherwise it is empty and the stream ends here.
   */
  | { kind: 'oversized'; firstByte: number; length: number; head: Buffer }
  /** The remaining-length field is not a valid variable byte integer: the stream cannot be framed any further. */
  | { kind: 'malformed' };

/** The most MQTT's four-byte remaining length can announce. */
const MAX_REMAINING_LENGTH = 268_435_455;

export class MqttFramer {
  private buffered: Buffer | null = null;
  /** While skipping an oversized packet: bytes still to drop, and its head being collected. */
  private skipping: { firstByte: number; length: number; left: number; head: Buffer[]; headLeft: number } | null = null;
  private broken = false;
  /** Skip oversized packets and go on framing, rather than stop at the first. */
  skipOversized = false;

  /**
   * @param maxPacketBytes the largest whole packet (fixed header included) accepted; changeable, since
   *   the limit is smaller before the connection authenticated.
   * @param headBytes how much of an oversized packet's body to keep for the caller.
   */
  constructor(
    public maxPacketBytes: number,
    private readonly headBytes = 2 + 65_535 + 2,
  ) {}

  /** Feeds a chunk read from the socket; returns the frames it completed, in order. */
  push(chunk: Buffer): Frame[] {
    if (this.broken) return [];
    const frames: Frame[] = [];
    let data = chunk;
    if (this.skipping) data = this.skip(this.skipping, data, frames);
    if (this.buffered && data.length > 0) data = Buffer.concat([this.buffered, data]);
    else if (this.buffered) data = this.buffered;
    this.buffered = null;
    let offset = 0;
    while (offset < data.length) {
      const header = readFixedHeader(data, offset);
      if (header === 'incomplete') break;
      if (header === 'malformed') {
        this.broken = true;
        frames.push({ kind: 'malformed' });
        return frames;
      }
      const total = header.headerBytes + header.length;
      if (total > this.maxPacketBytes) {
        const firstByte = data.readUInt8(offset);
        if (!this.skipOversized) {
          this.broken = true;
          frames.push({ kind: 'oversized', firstByte, length: header.length, head: Buffer.alloc(0) });
          return frames;
        }
        this.skipping = { firstByte, length: header.length, left: header.length, head: [], headLeft: Math.min(this.headBytes, header.length) };
        const rest = this.skip(this.skipping, data.subarray(offset + header.headerBytes), frames);
        if (this.skipping) return frames;
        data = rest;
        offset = 0;
        continue;
      }
      if (data.length - offset < total) break;
      frames.push({ kind: 'packet', bytes: data.subarray(offset, offset + total) });
      offset += total;
    }
    // Copy the partial packet out, so a small remainder does not pin a large chunk.
    if (offset < data.length) this.buffered = Buffer.from(data.subarray(offset));
    return frames;
  }

  /** Drops the oversized packet's bytes from `data`, returns what follows it. */
  private skip(skipping: NonNullable<MqttFramer['skipping']>, data: Buffer, frames: Frame[]): Buffer {
    const take = Math.min(skipping.left, data.length);
    if (skipping.headLeft > 0) {
      const head = data.subarray(0, Math.min(skipping.headLeft, take));
      skipping.head.push(Buffer.from(head));
      skipping.headLeft -= head.length;
    }
    skipping.left -= take;
    if (skipping.left > 0) return data.subarray(data.length);
    this.skipping = null;
    frames.push({ kind: 'oversized', firstByte: skipping.firstByte, length: skipping.length, head: Buffer.concat(skipping.head) });
    return data.subarray(take);
  }
}

function readFixedHeader(data: Buffer, offset: number): { headerBytes: number; length: number } | 'incomplete' | 'malformed' {
  let length = 0;
  let multiplier = 1;
  for (let i = 1; i <= 4; i++) {
    if (offset + i >= data.length) return 'incomplete';
    const byte = data.readUInt8(offset + i);
    length += (byte & 0x7f) * multiplier;
    if ((byte & 0x80) === 0) return length > MAX_REMAINING_LENGTH ? 'malformed' : { headerBytes: 1 + i, length };
    multiplier *= 128;
  }
  return 'malformed';
}
