// The subpath: the package's entry loads TypeORM, which the device gateway (no database) has no use for.
import { observeBatches } from '@tracking/database/batched-rows';
import type { RpcMetrics } from '@tracking/messaging';
import { collectDefaultMetrics, Gauge, Histogram, type Metric, Registry } from 'prom-client';
import type { DataSource } from 'typeorm';

/** Latency buckets in seconds, from a fast read to past the gateway's 5 s RPC timeout. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface ServiceMetricsOptions {
  /** Node's process metrics (CPU, memory, event loop lag, GC): once per process, not per app in tests. */
  processMetrics?: boolean;
}

/** The counters of node-postgres' pool (`pg.Pool`) that TypeORM's PostgreSQL driver keeps as `master`. */
interface PgPoolCounts {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/**
 * The Prometheus registry of one service process, every series labelled with `service`, and the
 * metrics every service shares: NATS request/reply latency on both sides and the database pool. Each
 * app adds its own (the gateway's HTTP histogram, the worker's queue) to `registry`. One instance per
 * app rather than prom-client's global registry, so that several apps in one test process never clash.
 */
export class ServiceMetrics implements RpcMetrics {
  readonly registry = new Registry();

  private readonly rpcClientDuration = new Histogram({
    name: 'nats_rpc_client_duration_seconds',
    help: 'NATS requests this process sent, from request to reply, by subject and outcome (ok or the error code).',
    labelNames: ['subject', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  private readonly rpcServerDuration = new Histogram({
    name: 'nats_rpc_server_duration_seconds',
    help: 'NATS messages this process handled, from arrival to reply, by subject and outcome (ok or the error code).',
    labelNames: ['subject', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  private readonly rpcServerInFlight = new Gauge({
    name: 'nats_rpc_server_in_flight',
    help: 'NATS messages being handled now, by subject.',
    labelNames: ['subject'] as const,
    registers: [this.registry],
  });

  constructor(
    readonly service: string,
    options: ServiceMetricsOptions = {},
  ) {
    this.registry.setDefaultLabels({ service });
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  observeRpcClient(subject: string, outcome: string, seconds: number): void {
    this.rpcClientDuration.observe({ subject, outcome }, seconds);
  }

  observeRpcServer(subject: string, outcome: string, seconds: number): void {
    this.rpcServerDuration.observe({ subject, outcome }, seconds);
  }

  countRpcServerInFlight(subject: string, delta: 1 | -1): void {
    this.rpcServerInFlight.inc({ subject }, delta);
  }

  /**
   * The connections of the service's database pool, read at each scrape, and how many calls of the hot
   * reads each statement of `batchedRows` answers.
   */
  watchDatabasePool(dataSource: DataSource): void {
    const batched = new Histogram({
      name: 'database_batched_calls',
      help: 'Hot reads answered by one PostgreSQL statement (batchedRows: the calls of one event-loop turn; 1 is a call that ran alone).',
      buckets: [1, 2, 4, 8, 16, 32],
      registers: [this.registry],
    });
    observeBatches(dataSource, (calls) => batched.observe(calls));
    new Gauge({
      name: 'database_pool_connections',
      help: 'Connections of the database pool: total open, idle, and waiting (queries waiting for a free connection).',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const pool = (dataSource.driver as { master?: PgPoolCounts }).master;
        // Before the pool exists or after it is closed there is nothing to report.
        if (!dataSource.isInitialized || !pool) return this.reset();
        this.set({ state: 'total' }, pool.totalCount);
        this.set({ state: 'idle' }, pool.idleCount);
        this.set({ state: 'waiting' }, pool.waitingCount);
      },
    });
  }

  /** Serves metrics kept in another registry (the gateway's protection counters), with the `service` label. */
  include(registry: Registry): void {
    // prom-client types the entries as plain objects; they are the metric instances themselves.
    for (const metric of registry.getMetricsAsArray()) this.registry.registerMetric(metric as unknown as Metric);
  }
}
