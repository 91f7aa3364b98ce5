import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';

/**
 * A server process of a test's own (nats-server, redis-server) on a fixed port of 127.0.0.1, which the
 * test may kill and start again on the same port (an outage, a restart), unlike the shared servers every
 * other test uses. Subclasses say how to launch it and which line of its output means it is ready.
 */
export abstract class OwnServer {
  private process: ChildProcess | undefined;
  private output: string[] = [];

  protected constructor(readonly port: number) {}

  get running(): boolean {
    return this.process !== undefined;
  }

  /** Spawns `binary`; resolves once its output contains `ready`, rejects if it exits first. No-op while running. */
  protected async launch(binary: string, args: string[], ready: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
    if (this.process) return;
    const child = spawn(binary, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.process = child;
    this.output = [];
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        this.output.push(chunk.toString());
        if (this.output.join('').includes(ready)) resolve();
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        if (this.process === child) this.process = undefined;
        reject(new Error(`${binary} exited (${code ?? signal}) before it was ready:\n${this.output.join('')}`));
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
