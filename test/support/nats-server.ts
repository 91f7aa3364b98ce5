import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from './processes.js';

/** The nats-server binary; `NATS_SERVER_BIN` overrides it. */
const BINARY = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';
const READY = 'Server is ready';

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
export class OwnNatsServer {
  private process: ChildProcess | undefined;
  private output: string[] = [];

  private constructor(
    readonly port: number,
    private options: OwnNatsServerOptions,
  ) {}

  static async start(options: OwnNatsServerOptions = {}): Promise<OwnNatsServer> {
    const server = new OwnNatsServer(await freePort(), options);
    await server.start();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.process !== undefined;
  }

  /** Starts the server (again) on its port, `env` over the first start's; resolves once it accepts clients. */
  async start(env: Record<string, string> = {}): Promise<void> {
    if (this.process) return;
    this.options = { ...this.options, env: { ...this.options.env, ...env } };
    const args = ['-a', '127.0.0.1', '-p', String(this.port), ...(this.options.config ? ['-c', this.options.config] : []), ...(this.options.args ?? [])];
    const child = spawn(BINARY, args, { env: { ...process.env, ...this.options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.process = child;
    this.output = [];
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        this.output.push(chunk.toString());
        if (this.output.join('').includes(READY)) resolve();
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        if (this.process === child) this.process = undefined;
        reject(new Error(`nats-server exited (${code ?? signal}) before it was ready:\n${this.output.join('')}`));
      });
    });
  }

  /** Kills the server (SIGKILL: clients see their connections drop at once); resolves once it has exited. */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }

  /** What the server wrote since its last start. */
  log(): string {
    return this.output.join('');
  }
}
