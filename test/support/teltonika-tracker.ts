import { connect as connectTcp, type Socket } from 'node:net';
import { encodeHandshake } from '../../apps/device-gateway/src/teltonika/teltonika-codec.js';

/** A Teltonika device over raw TCP (or a TLS socket): what it receives, in order. */
export class Tracker {
  private received = Buffer.alloc(0);
  private waiter: (() => void) | undefined;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.waiter?.();
    });
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => {
      resolve();
      this.waiter?.();
    }));
  }

  /** A tracker on a socket already connected (a TLS one). */
  static over(socket: Socket): Tracker {
    return new Tracker(socket);
  }

  static async open(port: number, sockets: Socket[]): Promise<Tracker> {
    const socket = connectTcp(port, '127.0.0.1');
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new Tracker(socket);
  }

  send(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Bytes received and not yet taken by `next`. */
  get pending(): number {
    return this.received.length;
  }

  async login(imei: string): Promise<Buffer> {
    this.send(encodeHandshake(imei));
    return this.next(1);
  }

  /** The next `n` bytes received; fails if the connection closes first. */
  async next(n: number): Promise<Buffer> {
    while (this.received.length < n) {
      if (this.socket.destroyed) throw new Error(`closed after ${this.received.length} of ${n} bytes`);
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
    const out = this.received.subarray(0, n);
    this.received = this.received.subarray(n);
    return out;
  }
}
