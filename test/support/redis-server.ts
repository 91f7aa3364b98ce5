import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from './processes.js';

/** The redis-server binary; `REDIS_SERVER_BIN` overrides it. */
const BINARY = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const READY = 'Ready to accept connections';

/**
 * A redis-server of a test's own, on a free port of 127.0.0.1, without persistence: stopping and starting
 * it again on the same port is a Redis restart that lost every key (the shared server stays up for every
 * other test).
 */
export class OwnRedisServer {
  private process: ChildProcess | undefined;
  private output: string[] = [];

  private constructor(readonly port: number) {}

  static async start(): Promise<OwnRedisServer> {
    const server = new OwnRedisServer(await freePort());
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server (again, empty) on its port; resolves once it accepts clients. */
  async start(): Promise<void> {
    if (this.process) return;
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'];
    const child = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
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
        reject(new Error(`redis-server exited (${code ?? signal}) before it was ready:\n${this.output.join('')}`));
      });
    });
  }

  /** Kills the server (SIGKILL: its keys are gone, clients see their connections drop); resolves once it has exited. */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }
}
