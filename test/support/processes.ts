import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { TestStack } from './stack.js';

/** A service of the stack running as its own process, from the build (`npm test` builds first). */
const ENTRY_POINTS = {
  worker: { path: 'apps/oms/dist/worker.js', ready: 'worker is consuming the operations queue' },
  oms: { path: 'apps/oms/dist/main.js', ready: 'oms is listening on NATS' },
  dms: { path: 'apps/dms/dist/main.js', ready: 'dms is listening on NATS' },
} as const;

export type ServiceName = keyof typeof ENTRY_POINTS;

export interface ServiceProcess {
  readonly child: ChildProcess;
  /** The last lines the process wrote (for a failing test's message). */
  output(): string;
  /** SIGKILL: the process gets no chance to finish anything. Resolves once it has exited. */
  kill9(): Promise<void>;
  /** SIGTERM, then waits for the exit code. */
  terminate(): Promise<number | null>;
}

const running = new Set<ChildProcess>();

/**
 * Starts `name` with the stack's environment and resolves once it logs that it is ready (its
 * databases migrated, subscribed or consuming). Rejects with its output if it exits first.
 */
export async function spawnService(stack: TestStack, name: ServiceName, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const entry = ENTRY_POINTS[name];
  const script = fileURLToPath(new URL(`../../${entry.path}`, import.meta.url));
  if (!existsSync(script)) throw new Error(`${entry.path} is missing: build first (npm test does)`);
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...stack.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const output: string[] = [];
  const keep = (line: string) => {
    output.push(line);
    if (output.length > 200) output.shift();
  };
  child.stderr?.on('data', (chunk: Buffer) => keep(chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      keep(line);
      if (line.includes(entry.ready)) resolve();
    });
    child.once('exit', (code, signal) => reject(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${output.join('\n')}`)));
  });
  return {
    child,
    output: () => output.join('\n'),
    async kill9() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    },
    async terminate() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}

/** Kills every process `spawnService` started that is still running (for `afterAll`). */
export async function killServices(): Promise<void> {
  await Promise.all(
    [...running].map(async (child) => {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }),
  );
}
