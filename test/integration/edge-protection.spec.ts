import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { pino } from 'pino';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readOpsConfig } from '@tracking/observability';
import { readGatewayConfig } from '../../apps/gateway/src/config.js';
import { startGateway } from '../../apps/gateway/src/gateway.app.js';
import { ProtectionMetrics } from '../../apps/gateway/src/protection/protection.metrics.js';
import { bulkRetirePath } from '../factories/bulk.factory.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { expectError, UUID } from '../support/http-assertions.js';
import { TestStack } from '../support/stack.js';

const MIB = 1024 * 1024;
const JSON_TYPE = { 'content-type': 'application/json' };

interface RawAnswer {
  /** Everything the server sent before it closed the connection. */
  text: string;
  status: number | undefined;
  headers: Record<string, string>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON the tests inspect freely, as HttpResult
  body: any;
  /** Milliseconds from connecting until the server closed the connection. */
  closedAfterMs: number;
}

/** Opens a TCP connection to `baseUrl`, resolves once it is established. */
function openSocket(baseUrl: string): Promise<Socket> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Reads what the server sends on `socket` until it closes it (or `limitMs` passes: then `closedAfterMs` is Infinity). */
function untilClosed(socket: Socket, startedAt: number, limitMs = 10000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    const finish = (closedAfterMs: number) => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.filter((line) => line.includes(':')).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = undefined;
      }
      resolve({ text, status: statusLine ? Number(statusLine.split(' ')[1]) : undefined, headers, body: parsed, closedAfterMs });
    };
    const timer = setTimeout(() => {
      socket.destroy();
      finish(Number.POSITIVE_INFINITY);
    }, limitMs);
    socket.on('close', () => finish(performance.now() - startedAt));
  });
}

/** Sends `raw` on a new connection and reads the answer until the server closes the connection. */
async function rawExchange(baseUrl: string, raw: string): Promise<RawAnswer> {
  const socket = await openSocket(baseUrl);
  const answer = untilClosed(socket, performance.now());
  socket.write(raw);
  return answer;
}

/** The envelope of the HTTP parser's errors: status, `MalformedRequest`, a new request id, and the connection closed. */
function expectParserError(answer: RawAnswer, status: number): void {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.headers['x-request-id']).toMatch(UUID);
  expect(answer.headers.connection).toBe('close');
  expect(Object.keys(answer.body)).toEqual(['error']);
  expect(answer.body.error).toMatchObject({ id: expect.stringMatching(UUID), code: 'MalformedRequest', message: expect.any(String) });
  expect(Number.isFinite(answer.closedAfterMs)).toBe(true);
}

/**
 * The gateway's edge against hostile or careless clients: what it costs to send a body without a token,
 * the cost of `/health/ready`, slow clients, the HTTP parser's own errors, the addresses it binds and
 * what it does when it stops.
 */
describe('edge protection', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await TestStack.start();
    tenant = await createTenant(stack);
  });
  afterAll(() => stack?.stop());

  /** JSON bodies the gateway's parser has read so far, by outcome. */
  async function jsonBodies(): Promise<Record<string, number>> {
    const { values } = await stack.gateway.get(ProtectionMetrics).jsonBodies.get();
    return Object.fromEntries(values.map((sample) => [String(sample.labels.outcome), sample.value]));
  }

  describe('bodies of authenticated routes', () => {
    const deep = '['.repeat(4 * MIB - 16);

    it('401 without a token before the body is read: 4 MiB of nesting, invalid JSON and a wrong content type alike', async () => {
      const before = await jsonBodies();
      const path = bulkRetirePath(tenant);
      const answers = await Promise.all([
        stack.request('POST', path, { rawBody: deep, headers: JSON_TYPE }),
        stack.request('POST', path, { rawBody: deep, headers: { ...JSON_TYPE, authorization: 'Bearer a.b.c' } }),
        stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { rawBody: '{"name":', headers: JSON_TYPE }),
        stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`, { rawBody: 'name=x', headers: { 'content-type': 'text/plain' } }),
      ]);
      for (const answer of answers) expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status: 401, code: 'Unauthorized' });
      // Not one of them reached the JSON parser.
      expect(await jsonBodies()).toEqual(before);
    });

    it('refuses before reading the body wherever the answer does not depend on it: 404 route, 400 account, 403 role', async () => {
      const viewer = await createTenant(stack, { role: 'Viewer' });
      const ingest = await createTenant(stack, { role: 'Ingest' });
      const other = await createTenant(stack);
      const large = JSON.stringify({ name: 'x'.repeat(0.9 * MIB) });
      const bulk = JSON.stringify({ deviceIds: [], padding: 'x'.repeat(3.9 * MIB) });
      const shipments = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
      const before = await jsonBodies();
      const cases: [string, string, { token?: string; rawBody: string }, number, string][] = [
        ['unknown route, no token', '/v1/nope', { rawBody: large }, 404, 'RouteNotFound'],
        ['unknown route, a token', '/v1/nope', { token: tenant.token, rawBody: large }, 404, 'RouteNotFound'],
        ['path in another case', shipments.replace('/v1/accounts/', '/V1/Accounts/'), { token: tenant.token, rawBody: large }, 404, 'RouteNotFound'],
        ['a method the path does not take', '/health/ready', { rawBody: large }, 404, 'RouteNotFound'],
        ['the JWKS', '/v1/.well-known/jwks.json', { rawBody: large }, 404, 'RouteNotFound'],
        ["another tenant's account", bulkRetirePath(tenant), { token: other.token, rawBody: bulk }, 400, 'InvalidParameter'],
        ['a Viewer writing', bulkRetirePath(viewer), { token: viewer.token, rawBody: bulk }, 403, 'Forbidden'],
        ['Ingest writing shipments', `/v1/accounts/${ingest.accountIds[0]}/shipments`, { token: ingest.token, rawBody: large }, 403, 'Forbidden'],
        ['a Viewer sending readings', `/v1/accounts/${viewer.accountIds[0]}/readings`, { token: viewer.token, rawBody: bulk }, 403, 'Forbidden'],
      ];
      for (const [name, path, options, status, code] of cases) {
        const answer = await stack.request('POST', path, { ...options, headers: JSON_TYPE });
        expect.soft({ name, status: answer.status, code: answer.body?.error?.code }).toEqual({ name, status, code });
      }
      // Not one of them reached the JSON parser.
      expect(await jsonBodies()).toEqual(before);
      // Ingest may send readings: its body is read (and judged: an envelope of one unknown field).
      const allowed = await stack.request('POST', `/v1/accounts/${ingest.accountIds[0]}/readings`, { token: ingest.token, rawBody: large, headers: JSON_TYPE });
      expect({ status: allowed.status, field: allowed.body.error?.details?.field }).toEqual({ status: 400, field: 'name' });
      expect((await jsonBodies()).parsed).toBe((before.parsed ?? 0) + 1);
    });

    it('measures the CPU of 20 unauthenticated 0.9 MiB POSTs to an unknown route (printed, for docs/edge-protection.md)', async () => {
      const large = JSON.stringify({ name: 'x'.repeat(0.9 * MIB) });
      const small = JSON.stringify({ name: 'x' });
      const cpuPerRequest = async (rawBody: string) => {
        const start = process.cpuUsage();
        for (let i = 0; i < 20; i++) expect((await stack.request('POST', '/v1/nope', { rawBody, headers: JSON_TYPE })).status).toBe(404);
        const used = process.cpuUsage(start);
        return (used.user + used.system) / 20 / 1000;
      };
      await cpuPerRequest(small);
      const smallMs = await cpuPerRequest(small);
      const largeMs = await cpuPerRequest(large);
      console.info(`CPU per POST /v1/nope (gateway and test client in one process): small body ${smallMs.toFixed(2)} ms, 0.9 MiB body ${largeMs.toFixed(2)} ms`);
    });

    it('with a token, 400 MalformedRequest for 4 MiB of nesting, refused by the depth scan before JSON.parse', async () => {
      const before = await jsonBodies();
      const answer = await stack.request('POST', bulkRetirePath(tenant), { token: tenant.token, rawBody: deep, headers: JSON_TYPE });
      expectError(answer, 400, 'MalformedRequest');
      expect(answer.body.error.message).toContain('deeper than 32 levels');
      const after = await jsonBodies();
      expect((after.too_deep ?? 0) - (before.too_deep ?? 0)).toBe(1);
      expect(after.parsed ?? 0).toBe(before.parsed ?? 0);
      expect(after.invalid ?? 0).toBe(before.invalid ?? 0);
    });

    it('counts brackets inside strings as text: a deep-looking string is parsed', async () => {
      const before = await jsonBodies();
      const answer = await stack.request('POST', `/v1/accounts/${tenant.accountIds[0]}/shipments`, {
        token: tenant.token,
        rawBody: JSON.stringify({ name: `${'[{'.repeat(40)}\\"${'"'.repeat(3)}` }),
        headers: JSON_TYPE,
      });
      expect(answer.status, answer.text).toBe(201);
      expect((await jsonBodies()).parsed).toBe((before.parsed ?? 0) + 1);
    });

    it('the token request reads at most 16 KiB: one byte more is 413 PayloadTooLarge', async () => {
      const body = (size: number) => `{"x":"${'a'.repeat(size - 8)}"}`;
      expect(body(16 * 1024).length).toBe(16 * 1024);
      expectError(await stack.request('POST', '/v1/applications/token', { rawBody: body(16 * 1024 + 1), headers: JSON_TYPE }), 413, 'PayloadTooLarge');
      // At the limit the body is read, and refused for what it says.
      expectError(await stack.request('POST', '/v1/applications/token', { rawBody: body(16 * 1024), headers: JSON_TYPE }), 400, 'InvalidParameter', {
        field: 'x',
        issue: 'UnknownField',
      });
    });
  });

  describe('GET /health/ready on the API port', () => {
    it('shares one check among concurrent calls and gives its report again for about a second', async () => {
      const replica = await stack.startGatewayReplica();
      const dataSource = stack.gatewayReplicas.at(-1)!.get(DataSource, { strict: false });
      const query = vi.spyOn(dataSource, 'query');
      const checks = () => query.mock.calls.filter(([sql]) => sql === 'SELECT 1').length;
      try {
        const answers = await Promise.all(Array.from({ length: 20 }, () => stack.request('GET', '/health/ready', { baseUrl: replica })));
        expect(answers.map((answer) => answer.status)).toEqual(new Array(20).fill(200));
        expect(answers[0]!.body).toEqual({ status: 'ok', checks: { database: 'ok', nats: 'ok', oms: 'ok', dms: 'ok', redis: 'ok' } });
        expect(checks()).toBe(1);
        expect((await stack.request('GET', '/health/ready', { baseUrl: replica })).status).toBe(200);
        expect(checks()).toBe(1);
        // Once the report is a second old, the next call checks again.
        await new Promise((resolve) => setTimeout(resolve, 1100));
        expect((await stack.request('GET', '/health/ready', { baseUrl: replica })).status).toBe(200);
        expect(checks()).toBe(2);
      } finally {
        query.mockRestore();
      }
    });

    it('is rate limited per client address, as any request without a token', async () => {
      const replica = await stack.startGatewayReplica({ RATE_LIMIT_ADDRESS: '1/1m burst 3' });
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await stack.request('GET', '/health/ready', { baseUrl: replica }));
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429, 429]);
      expectError(answers[3]!, 429, 'RateLimitExceeded', { policy: 'address' });
      expect(answers[0]!.headers.get('ratelimit-policy')).toMatch(/^"address";/);
      // Liveness costs nothing and stays unlimited.
      expect((await stack.request('GET', '/health/live', { baseUrl: replica })).status).toBe(200);
    });
  });

  describe("the HTTP parser's own errors, in the envelope with X-Request-Id", () => {
    it('431 for headers over 16 KiB', async () => {
      expectParserError(await rawExchange(stack.baseUrl, `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`), 431);
    });

    it('400 for a malformed request line', async () => {
      expectParserError(await rawExchange(stack.baseUrl, 'NOT HTTP AT ALL\r\n\r\n'), 400);
    });

    it('400 for a header name that is not a token', async () => {
      expectParserError(await rawExchange(stack.baseUrl, 'GET /health/live HTTP/1.1\r\nHo st: x\r\n\r\n'), 400);
    });

    it('400 for Content-Length together with Transfer-Encoding, and the body is not taken as a request', async () => {
      const smuggled = 'GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n';
      const answer = await rawExchange(
        stack.baseUrl,
        `POST /v1/applications/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`,
      );
      expectParserError(answer, 400);
      expect(answer.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    });
  });

  describe('slow clients and the connection cap', () => {
    let replica: string;
    beforeAll(async () => {
      replica = await stack.startGatewayReplica({ HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_MAX_CONNECTIONS: '3' });
    });

    it('cuts a client dribbling its headers after the header timeout, with 408 in the envelope', async () => {
      const socket = await openSocket(replica);
      const startedAt = performance.now();
      const answer = untilClosed(socket, startedAt);
      socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n');
      const dribble = setInterval(() => socket.writable && socket.write('X-Slow: 1\r\n'), 100);
      const result = await answer.finally(() => clearInterval(dribble));
      expectParserError(result, 408);
      // Not before the timeout, and not long after it (Node checks every 500 ms here).
      expect(result.closedAfterMs).toBeGreaterThanOrEqual(900);
      expect(result.closedAfterMs).toBeLessThan(4000);
    });

    it('closes connections beyond the cap at once; those within it are served', async () => {
      const held = await Promise.all([0, 1, 2].map(() => openSocket(replica)));
      try {
        // Each of the three is served (and so counted by the server) before the fourth arrives.
        for (const socket of held) {
          const answered = new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8'))));
          socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n');
          expect(await answered).toMatch(/^HTTP\/1\.1 200/);
        }
        const extra = await openSocket(replica);
        const refused = await untilClosed(extra, performance.now(), 5000);
        expect(refused.text).toBe('');
        expect(Number.isFinite(refused.closedAfterMs)).toBe(true);
      } finally {
        for (const socket of held) socket.destroy();
      }
    });
  });

  describe('error logs during an outage', () => {
    it('writes one line per kind of failure, not one per request', async () => {
      const lines: Array<{ msg: string; code?: string; statusCode?: number; suppressed?: number }> = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
          done();
        },
      });
      let gateway: NestFastifyApplication | undefined;
      try {
        gateway = await startGateway(readGatewayConfig(stack.env), pino({ level: 'info' }, sink));
        const address = gateway.getHttpServer().address();
        const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
        await stack.stopOmsReplicas();
        const path = `/v1/accounts/${tenant.accountIds[0]}/shipments`;
        const answers = await Promise.all(Array.from({ length: 30 }, () => stack.request('GET', path, { token: tenant.token, baseUrl })));
        expect(answers.map((answer) => answer.status)).toEqual(new Array(30).fill(503));
        expect(lines.filter((line) => line.msg === 'request failed')).toEqual([expect.objectContaining({ code: 'ServiceUnavailable', suppressed: 0 })]);
        expect(lines.filter((line) => line.msg === 'request completed')).toEqual([expect.objectContaining({ statusCode: 503, suppressed: 0 })]);
      } finally {
        await gateway?.close();
        if (stack.oms.length === 0) await stack.startOmsReplica();
      }
    });
  });

  describe('bind addresses', () => {
    const file = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

    it('loopback by default, for the API port and the ops port', () => {
      expect(readGatewayConfig({}).HOST).toBe('127.0.0.1');
      expect(readOpsConfig({ port: 9100, shutdownTimeoutMs: 1000 }, {}).OPS_HOST).toBe('127.0.0.1');
    });

    it('npm start binds loopback; the image, docker compose and the Kubernetes manifests bind every interface', () => {
      expect(file('scripts/start.mjs')).toMatch(/HOST: process\.env\.HOST \?\? '127\.0\.0\.1',\s+OPS_HOST: process\.env\.OPS_HOST \?\? '127\.0\.0\.1'/);
      expect(file('Dockerfile')).toMatch(/^\s+HOST=0\.0\.0\.0 \\\n\s+OPS_HOST=0\.0\.0\.0$/m);
      expect(file('docker-compose.yml')).toMatch(/environment: &environment\n(\s+#.*\n)*\s+HOST: 0\.0\.0\.0\n\s+OPS_HOST: 0\.0\.0\.0\n/);
      const kustomization = file('deploy/k8s/base/kustomization.yaml');
      expect(kustomization).toContain('- HOST=0.0.0.0');
      expect(kustomization).toContain('- OPS_HOST=0.0.0.0');
    });
  });
});
