import { OwnServer } from './own-server.js';
import { freePort } from './processes.js';

/** The redis-server binary; `REDIS_SERVER_BIN` overrides it. */
const BINARY = process.env.REDIS_SERVER_BIN ?? 'redis-server';

/**
 * A redis-server of a test's own, on a free port of 127.0.0.1, without persistence: stopping and starting
 * it again on the same port is a Redis restart that lost every key (the shared server stays up for every
 * other test).
 */
export class OwnRedisServer extends OwnServer {
  static async start(): Promise<OwnRedisServer> {
    const server = new OwnRedisServer(await freePort());
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server (again, empty) on its port; resolves once it accepts clients. */
  start(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'];
    return this.launch(BINARY, args, 'Ready to accept connections');
  }
}
