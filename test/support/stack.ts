import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import type { INestApplicationContext, INestMicroservice } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createLogger } from '@tracking/core';
import { cloneDatabase, deleteRedisKeys, dropDatabases, testRedisUrl } from '@tracking/testing';
import { inject } from 'vitest';
import { readDmsConfig } from '../../apps/dms/src/config.js';
import { startDms } from '../../apps/dms/src/dms.app.js';
import { type GatewayConfig, readGatewayConfig } from '../../apps/gateway/src/config.js';
import { startGateway } from '../../apps/gateway/src/gateway.app.js';
import { IdentityService } from '../../apps/gateway/src/identity/identity.service.js';
import { readOmsConfig } from '../../apps/oms/src/config.js';
import { startOms, startOmsWorker } from '../../apps/oms/src/oms.app.js';
import { deleteStreams } from './jetstream.js';

let stackCounter = 0;

export interface StackOptions {
  omsReplicas?: number;
  dmsReplicas?: number;
  /** Bulk-job workers in this process (none unless asked for). */
  workers?: number;
  /** Extra environment for every process of the stack, e.g. `{ RPC_TIMEOUT_MS: '500' }`. */
  env?: Record<string, string>;
  /** Extra environment for one component only, over `env` (e.g. each one's NATS credentials). */
  componentEnv?: Partial<Record<Component, Record<string, string>>>;
}

export type Component = 'gateway' | 'oms' | 'dms' | 'worker';

// Response bodies are JSON that tests inspect freely; a typed default would only add casts.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface HttpResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  /** Serialised as JSON with `Content-Type: application/json` unless `rawBody` is given. */
  body?: unknown;
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** Another gateway of the stack (`startGatewayReplica`); default the stack's own. */
  baseUrl?: string;
}

const logger = createLogger('test', process.env.LOG_LEVEL ?? 'silent');

/**
 * The whole system for one test file, in this process: the gateway on a free port, OMS and DMS
 * replicas on NATS, each with a fresh clone of its template database, all under a NATS subject prefix
 * and a Redis key prefix no other run uses.
 */
export class TestStack {
  readonly oms: INestMicroservice[] = [];
  readonly dms: INestMicroservice[] = [];
  readonly workers: INestApplicationContext[] = [];
  gateway!: NestFastifyApplication;
  baseUrl = '';
  readonly gatewayReplicas: NestFastifyApplication[] = [];

  private constructor(
    readonly name: string,
    readonly env: Record<string, string>,
    private readonly componentEnv: Partial<Record<Component, Record<string, string>>> = {},
  ) {}

  /** The environment of one component: the stack's, with the component's own over it. */
  envOf(component: Component): Record<string, string> {
    return { ...this.env, ...this.componentEnv[component] };
  }

  static async start(options: StackOptions = {}): Promise<TestStack> {
    const runId = inject('runId');
    const name = `${runId}_${process.pid}_${++stackCounter}`;
    const [gatewayUrl, omsUrl, dmsUrl] = await Promise.all([
      cloneDatabase(`${runId}_gateway_tpl`, `${name}_gateway`),
      cloneDatabase(`${runId}_oms_tpl`, `${name}_oms`),
      cloneDatabase(`${runId}_dms_tpl`, `${name}_dms`),
    ]);
    const env = {
      NATS_SUBJECT_PREFIX: `test.${name}.`,
      REDIS_URL: testRedisUrl(),
      REDIS_KEY_PREFIX: `test:${name}:`,
      CURSOR_SECRET: `cursor-secret-${name}`,
      // Signing keys are stored encrypted, as in production.
      KEY_ENCRYPTION_KEYS: `test:${randomBytes(32).toString('base64')}`,
      GATEWAY_DATABASE_URL: gatewayUrl,
      OMS_DATABASE_URL: omsUrl,
      DMS_DATABASE_URL: dmsUrl,
      GATEWAY_DATABASE_POOL_SIZE: '4',
      OMS_DATABASE_POOL_SIZE: '4',
      DMS_DATABASE_POOL_SIZE: '2',
      PORT: '0',
      HOST: '127.0.0.1',
      // Suites send far faster than clients would; the rate limit suites set their own limits.
      RATE_LIMIT_APPLICATION: '100000/1s',
      RATE_LIMIT_ADDRESS: '100000/1s',
      RATE_LIMIT_TOKEN_FAILURES: '100000/1s',
      RATE_LIMIT_TOKEN_ADDRESS: '100000/1s',
      ...options.env,
    };
    const stack = new TestStack(name, env, options.componentEnv);
    for (let i = 0; i < (options.omsReplicas ?? 1); i++) await stack.startOmsReplica();
    for (let i = 0; i < (options.dmsReplicas ?? 1); i++) await stack.startDmsReplica();
    for (let i = 0; i < (options.workers ?? 0); i++) await stack.startWorker();
    await stack.startGatewayApp();
    return stack;
  }

  get gatewayConfig(): GatewayConfig {
    return readGatewayConfig(this.envOf('gateway'));
  }

  get identity(): IdentityService {
    return this.gateway.get(IdentityService);
  }

  async startOmsReplica(): Promise<INestMicroservice> {
    const app = await startOms(readOmsConfig(this.envOf('oms')), logger);
    this.oms.push(app);
    return app;
  }

  async startDmsReplica(): Promise<INestMicroservice> {
    const app = await startDms(readDmsConfig(this.envOf('dms')), logger);
    this.dms.push(app);
    return app;
  }

  async startWorker(): Promise<INestApplicationContext> {
    const app = await startOmsWorker(readOmsConfig(this.envOf('worker')), logger);
    this.workers.push(app);
    return app;
  }

  async stopWorkers(): Promise<void> {
    await Promise.all(this.workers.splice(0).map((app) => app.close()));
  }

  async stopOmsReplicas(): Promise<void> {
    await Promise.all(this.oms.splice(0).map((app) => app.close()));
  }

  async stopDmsReplicas(): Promise<void> {
    await Promise.all(this.dms.splice(0).map((app) => app.close()));
  }

  private async startGatewayApp(): Promise<void> {
    this.gateway = await startGateway(this.gatewayConfig, logger);
    this.baseUrl = baseUrlOf(this.gateway);
  }

  /**
   * Stops the stack's gateway and starts a new one on the same port (and `env` over the stack's): what a
   * client sees when the gateway is redeployed behind a stable address. The new process has empty caches.
   */
  async restartGateway(env: Record<string, string> = {}): Promise<void> {
    const port = new URL(this.baseUrl).port;
    await this.gateway.close();
    this.gateway = await startGateway(readGatewayConfig({ ...this.envOf('gateway'), ...env, PORT: port }), logger);
    if (baseUrlOf(this.gateway) !== this.baseUrl) throw new Error('the restarted gateway did not get its port back');
  }

  /** One more gateway on the stack's databases, NATS and Redis prefixes (and `env` over them); its base URL. */
  async startGatewayReplica(env: Record<string, string> = {}): Promise<string> {
    const replica = await startGateway(readGatewayConfig({ ...this.envOf('gateway'), ...env }), logger);
    this.gatewayReplicas.push(replica);
    return baseUrlOf(replica);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as HttpResult
  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<HttpResult<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    let body: string | Buffer | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch((options.baseUrl ?? this.baseUrl) + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = undefined;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  async stop(): Promise<void> {
    await Promise.all(this.gatewayReplicas.splice(0).map((replica) => replica.close()));
    await this.gateway?.close();
    await this.stopWorkers();
    await this.stopOmsReplicas();
    await this.stopDmsReplicas();
    // The separator matters: stack `..._1` must not drop the databases of stack `..._10`.
    await dropDatabases(`${this.name}_`);
    await deleteRedisKeys(`test:${this.name}:`);
    await deleteStreams(this.env.NATS_SUBJECT_PREFIX ?? `test.${this.name}.`);
  }
}

function baseUrlOf(gateway: NestFastifyApplication): string {
  const address = gateway.getHttpServer().address();
  if (address === null || typeof address === 'string') throw new Error('gateway has no TCP address');
  return `http://127.0.0.1:${address.port}`;
}
