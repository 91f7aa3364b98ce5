import { connect, createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';

/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** GET on an ops endpoint: its status and body (parsed when JSON). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are inspected freely, as in stack.ts
export async function getOps(baseUrl: string, path: string): Promise<{ status: number; contentType: string; text: string; body: any }> {
  const response = await fetch(baseUrl + path);
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  return { status: response.status, contentType, text, body: contentType.startsWith('application/json') ? JSON.parse(text) : undefined };
}

/** The samples of `/metrics` (Prometheus text format 0.0.4); comments and `# TYPE` lines are skipped. */
export async function scrape(opsUrl: string): Promise<MetricSample[]> {
  const { status, text } = await getOps(opsUrl, '/metrics');
  if (status !== 200) throw new Error(`/metrics answered ${status}: ${text}`);
  return parseExposition(text);
}

export function parseExposition(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The samples named `name` whose labels include `labels`. */
export function samplesOf(samples: MetricSample[], name: string, labels: Record<string, string> = {}): MetricSample[] {
  return samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
}

/** The value of the one sample named `name` with `labels` (0 when there is none, as Prometheus counts it). */
export function valueOf(samples: MetricSample[], name: string, labels: Record<string, string> = {}): number {
  return samplesOf(samples, name, labels).reduce((sum, sample) => sum + sample.value, 0);
}

/** Polls `condition` until it holds; fails after `timeoutMs` naming what it waited for. */
export async function waitUntil(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 30000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export interface HeldLock {
  /** Ends the transaction, letting whoever waits for the row go on. */
  release(): Promise<void>;
}

/** Takes a row lock (`sql` is a `SELECT ... FOR UPDATE` of one row) in its own transaction until `release`. */
export async function holdRow(url: string, sql: string, params: unknown[]): Promise<HeldLock> {
  const client = new pg.Client({ connectionString: url, application_name: 'test-lock' });
  // A failed test's stack drops the database under this connection; that is not a further failure.
  client.on('error', () => undefined);
  await client.connect();
  await client.query('BEGIN');
  const { rowCount } = await client.query(sql, params);
  if (rowCount !== 1) throw new Error(`nothing to lock: ${sql}`);
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      await client.query('ROLLBACK').catch(() => undefined);
      await client.end().catch(() => undefined);
    },
  };
}

/** How many sessions of `applicationName` wait for a lock in the database at `url`. */
export async function lockWaiters(url: string, applicationName: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ waiting: number }>(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'`,
      [applicationName],
    );
    return rows[0]!.waiting;
  } finally {
    await client.end();
  }
}

/** Whether a new TCP connection to `port` on 127.0.0.1 is refused (nothing listens there). */
export function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED') resolve(true);
      else reject(error);
    });
  });
}

/**
 * A TCP proxy in front of PostgreSQL, so that one process can lose its database while every other
 * process of the test keeps it: `cut()` stops listening and drops every connection, `restore()`
 * listens again on the same port.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Proxies to the host and port of `databaseUrl`; `urlFor` gives the same URL through the proxy. */
  static async for(databaseUrl: string): Promise<TcpProxy> {
    const target = new URL(databaseUrl);
    const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.restore();
    return proxy;
  }

  urlFor(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  async restore(): Promise<void> {
    const server = createServer((client) => this.pipe(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private pipe(client: Socket): void {
    const upstream = connect({ host: this.targetHost, port: this.targetPort });
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  }
}
