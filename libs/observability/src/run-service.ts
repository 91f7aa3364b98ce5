import { ConfigError, type Logger } from '@tracking/core';
import { compactHeap, compactsHeapAfterStart } from './compact-heap.js';
import { type OpsConfig, type OpsDefaults, readOpsConfig } from './ops-config.js';
import { type OpsServer, startOpsServer } from './ops-server.js';
import { Readiness, type ReadinessChecks } from './readiness.js';
import { ServiceMetrics } from './service-metrics.js';

/** A started service, as its process needs it. */
export interface RunningService {
  /** What `/health/ready` checks: the service's own dependencies. */
  readiness: ReadinessChecks;
  /** Stops taking work, finishes or hands back what is in flight, then closes its connections. */
  stop(): Promise<void>;
  /** Fields of the service's one "started" line at info, besides its ops port (the gateway: its API port). */
  details?: Record<string, unknown>;
}

/** One long-running process of the system: the gateway, the OMS, the DMS or a bulk-job worker. */
export interface ServiceDefinition<Config> {
  /** In messages and as the `service` label of every metric. */
  name: string;
  logger: Logger;
  ops: OpsDefaults;
  /** Reads the service's own environment; a bad variable stops the process before anything opens. */
  readConfig(): Config;
  /** Starts serving; resolves once the service takes work. */
  start(config: Config, metrics: ServiceMetrics): Promise<RunningService>;
}

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** How often a serving process checks its liveness itself (`ReadinessChecks.live`). */
const LIVENESS_INTERVAL_MS = 1000;

/**
 * Runs a service as this process: validates the configuration, opens the ops endpoints (before the
 * service starts, so that liveness answers while migrations run and readiness says "starting"),
 * starts the service, gives back what start-up left on the heap (`compactHeap`, in the processes that keep
 * V8's memory reducer), and stops it gracefully on SIGTERM or SIGINT:
 *
 * 1. readiness answers 503 at once;
 * 2. the service stops taking work and finishes or hands back what it holds (`RunningService.stop`);
 * 3. the process exits 0.
 *
 * The same signal again, or `SHUTDOWN_TIMEOUT_MS` passing, ends the process at once with exit code 1.
 * Only the same signal: Ctrl-C in a terminal sends SIGINT to a whole process group, and a supervisor
 * such as `npm start` then sends SIGTERM too, which must not cut the graceful shutdown short.
 */
export async function runService<Config>(definition: ServiceDefinition<Config>): Promise<void> {
  const { name, logger } = definition;
  let config: Config;
  let ops: OpsConfig;
  try {
    config = definition.readConfig();
    ops = readOpsConfig(definition.ops);
  } catch (error) {
    return failToStart(definition, error);
  }
  const metrics = new ServiceMetrics(name, { processMetrics: true });
  const readiness = new Readiness();
  let opsServer: OpsServer;
  try {
    opsServer = await startOpsServer({ host: ops.OPS_HOST, port: ops.OPS_PORT, metrics, readiness, logger });
  } catch (error) {
    return failToStart(definition, error);
  }
  logger.debug({ port: opsServer.port }, 'ops endpoints listening');

  const started = definition.start(config, metrics);
  const shutdown = new Shutdown(logger, ops.SHUTDOWN_TIMEOUT_MS, readiness, opsServer, started);
  for (const signal of SIGNALS) process.on(signal, () => shutdown.request(signal));
  let running: RunningService;
  try {
    running = await started;
  } catch (error) {
    return failToStart(definition, error);
  }
  // Before readiness says ready, so that no balanced request waits behind it. Only memory is at stake:
  // a failure is logged, never fatal.
  if (compactsHeapAfterStart()) {
    await compactHeap().then(
      (compaction) => logger.debug(compaction, 'heap compacted after start-up'),
      (error: unknown) => logger.warn({ err: error }, 'could not compact the heap after start-up'),
    );
  }
  readiness.serve(running.readiness);
  // A start says one thing at info: the service is ready, and on which ports (`PORT=0` and `OPS_PORT=0`
  // pick free ones, so the line is how a supervisor or a test learns them).
  logger.info({ ...running.details, opsPort: opsServer.port }, `${name} started`);
  watchLiveness(definition, readiness);
}

/**
 * Exits (code 1, with a fatal log line naming the failing check) once a liveness check fails outside a
 * shutdown: a process whose NATS connection is closed for good never serves again, and exiting lets any
 * supervisor (Kubernetes, Docker's restart policy, systemd) start a fresh one. Until then
 * `/health/live` answers 503.
 */
function watchLiveness(definition: ServiceDefinition<unknown>, readiness: Readiness): void {
  const timer = setInterval(() => {
    if (readiness.stopping) return;
    const { live, body } = readiness.liveness();
    if (live) return;
    clearInterval(timer);
    definition.logger.fatal({ checks: body.checks }, `${definition.name} lost a connection for good; exiting so that it is restarted`);
    void exit(definition.logger, 1);
  }, LIVENESS_INTERVAL_MS);
  timer.unref();
}

/** The shutdown sequence, started by the first signal. */
class Shutdown {
  private signal: NodeJS.Signals | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly timeoutMs: number,
    private readonly readiness: Readiness,
    private readonly opsServer: OpsServer,
    private readonly started: Promise<RunningService>,
  ) {}

  request(signal: NodeJS.Signals): void {
    if (this.signal === undefined) {
      this.signal = signal;
      void this.run(signal);
    } else if (signal === this.signal) {
      this.logger.warn({ signal }, 'signal received again: exiting without finishing the shutdown');
      void exit(this.logger, 1);
    } else {
      this.logger.info({ signal }, 'already shutting down');
    }
  }

  private async run(signal: NodeJS.Signals): Promise<void> {
    this.logger.info({ signal, timeoutMs: this.timeoutMs }, 'shutting down');
    this.readiness.stop();
    const deadline = setTimeout(() => {
      this.logger.error({ timeoutMs: this.timeoutMs }, 'shutdown did not finish in time; exiting');
      void exit(this.logger, 1);
    }, this.timeoutMs);
    try {
      // A signal during start-up stops the service once it has started (a failed start exits on its own).
      const running = await this.started;
      await running.stop();
      await this.opsServer.close();
      clearTimeout(deadline);
      this.logger.info('stopped');
      await exit(this.logger, 0);
    } catch (error) {
      this.logger.error({ err: error }, 'shutdown failed');
      await exit(this.logger, 1);
    }
  }
}

function failToStart(definition: ServiceDefinition<unknown>, error: unknown): Promise<never> {
  if (error instanceof ConfigError) process.stderr.write(`${definition.name}: ${error.message}\n`);
  else definition.logger.fatal({ err: error }, `${definition.name} failed to start`);
  return exit(definition.logger, 1);
}

/** Exits once the log lines written so far are out. */
function exit(logger: Logger, code: number): Promise<never> {
  return new Promise<never>(() => logger.flush(() => process.exit(code)));
}
