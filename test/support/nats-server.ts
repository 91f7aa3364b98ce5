import { OwnServer } from './own-server.js';
import { freePort } from './processes.js';

/** The nats-server binary; `NATS_SERVER_BIN` overrides it. */
const BINARY = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';

export interface OwnNatsServerOptions {
  /** A configuration file (`-c`); its `port`/`listen` is overridden by the free port. */
  config?: string;
  /** Environment of the server process, for `$VARIABLE` references in the configuration file. */
  env?: Record<string, string>;
  /** More command-line options (e.g. `--tls ...`). */
  args?: string[];
}

/**
 * A nats-server of a test's own, on a free port of 127.0.0.1, that the test may stop and start again on
 * the same port (an outage), unlike the shared server every other test uses.
 */
export class OwnNatsServer extends OwnServer {
  private constructor(
    port: number,
    private options: OwnNatsServerOptions,
  ) {
    super(port);
  }

  static async start(options: OwnNatsServerOptions = {}): Promise<OwnNatsServer> {
    const server = new OwnNatsServer(await freePort(), options);
    await server.start();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Starts the server (again) on its port, `env` over the first start's; resolves once it accepts clients. */
  start(env: Record<string, string> = {}): Promise<void> {
    if (this.running) return Promise.resolve();
    this.options = { ...this.options, env: { ...this.options.env, ...env } };
    const args = ['-a', '127.0.0.1', '-p', String(this.port), ...(this.options.config ? ['-c', this.options.config] : []), ...(this.options.args ?? [])];
    return this.launch(BINARY, args, 'Server is ready', { ...process.env, ...this.options.env });
  }
}
