import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { TestStack } from './stack.js';

/**
 * A service of the stack running as its own process, from the build (`npm test` builds first), and the
 * line it logs once it takes work; that line names the ports it bound (`opsPort`; the gateway's API:
 * `port`), since `PORT=0` and `OPS_PORT=0` pick free ones.
 */
const ENTRY_POINTS = {
  worker: { path: 'apps/oms/dist/worker.js', ready: '"msg":"worker started"' },
  oms: { path: 'apps/oms/dist/main.js', ready: '"msg":"oms started"' },
  dms: { path: 'apps/dms/dist/main.js', ready: '"msg":"dms started"' },
  gateway: { path: 'apps/gateway/dist/main.js', ready: '"msg":"gateway started"' },
  'device-gateway': { path: 'apps/device-gateway/dist/main.js', ready: '"msg":"device-gateway started"' },
} as const;

export type ServiceName = keyof typeof ENTRY_POINTS;

export interface ServiceProcess {
  readonly child: ChildProcess;
  /** Its ops endpoints (`/health/live`, `/health/ready`, `/metrics`), on a free port. */
  readonly opsUrl: string;
  /** The gateway's API, on a free port (gateway only). */
  readonly baseUrl: string | undefined;
  /** The last lines the process wrote (for a failing test's message). */
  output(): string;
  /** Every line the process wrote on stdout (its JSON log lines). */
  lines(): readonly string[];
  /** Resolves once the process writes a line containing `text` (at once if it already has). */
  waitForOutput(text: string, timeoutMs?: number): Promise<void>;
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
    env: { ...process.env, ...stack.env, LOG_LEVEL: 'info', LOG_FORMAT: 'json', OPS_PORT: '0', OPS_HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const output: string[] = [];
  const seen: string[] = [];
  const watchers = new Set<(line: string) => void>();
  const ports: { ops?: number; api?: number } = {};
  const keep = (line: string) => {
    output.push(line);
    if (output.length > 200) output.shift();
    for (const watch of watchers) watch(line);
  };
  child.stderr?.on('data', (chunk: Buffer) => keep(chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      seen.push(line);
      if (line.includes(entry.ready)) {
        ports.ops = portOf(line, 'opsPort');
        if (name === 'gateway') ports.api = portOf(line, 'port');
      }
      keep(line);
      if (line.includes(entry.ready)) resolve();
    });
    child.once('exit', (code, signal) => reject(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${output.join('\n')}`)));
  });
  if (ports.ops === undefined) throw new Error(`${name} did not log its ops port:\n${output.join('\n')}`);
  return {
    child,
    opsUrl: `http://127.0.0.1:${ports.ops}`,
    baseUrl: ports.api === undefined ? undefined : `http://127.0.0.1:${ports.api}`,
    output: () => output.join('\n'),
    lines: () => seen,
    waitForOutput(text, timeoutMs = 30000) {
      if (seen.some((line) => line.includes(text))) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          watchers.delete(watch);
          reject(new Error(`${name} wrote no line containing "${text}" within ${timeoutMs} ms:\n${output.join('\n')}`));
        }, timeoutMs);
        const watch = (line: string) => {
          if (!line.includes(text)) return;
          clearTimeout(timer);
          watchers.delete(watch);
          resolve();
        };
        watchers.add(watch);
      });
    },
    async kill9() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    },
    async terminate() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      // 'close', not 'exit': 'exit' may come before the last lines the process wrote were read from its
      // stdout, and a test reads those lines (what a shutdown logged) right after.
      const exited = once(child, 'close');
      child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}

function portOf(line: string, field: 'port' | 'opsPort'): number {
  const port = (JSON.parse(line) as Record<string, unknown>)[field];
  if (typeof port !== 'number') throw new Error(`no ${field} in: ${line}`);
  return port;
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

/** A TCP port on 127.0.0.1 that nothing listens on now, for a process that must be told its port. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}
