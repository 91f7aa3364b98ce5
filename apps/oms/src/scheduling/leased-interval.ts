import type { Logger } from '@tracking/core';
import { LeaseGroup } from '@tracking/outbox';
import type { OmsConfig } from '../config.js';

export interface LeasedIntervalOptions {
  config: Pick<OmsConfig, 'OMS_DATABASE_URL' | 'LEASE_TTL_MS' | 'LEASE_HEARTBEAT_MS'>;
  /** The lease's name (and its group's): one holder runs the task among every process that names it. */
  name: string;
  everyMs: number;
  run: () => Promise<unknown>;
  logger: Logger;
  /** Named in the log lines: "<what> failed; it runs again at the next interval". */
  what: string;
}

/**
 * A task that runs once per interval across every worker process: on the holder of its lease
 * (`LeaseGroup`, docs/leases.md), one run at a time. When the holder dies, another process takes the lease
 * within `LEASE_TTL_MS` and runs it from then on; after a PostgreSQL restart the holder renews (or takes
 * again) its lease on its next heartbeat. The task's work must tolerate a run cut short (each is batches of
 * idempotent deletes here).
 */
export class LeasedInterval {
  private group?: LeaseGroup;

  constructor(private readonly options: LeasedIntervalOptions) {}

  async start(): Promise<void> {
    const { config, name, everyMs, run, logger, what } = this.options;
    this.group = new LeaseGroup({
      databaseUrl: config.OMS_DATABASE_URL,
      group: name,
      names: [name],
      logger,
      ttlMs: config.LEASE_TTL_MS,
      heartbeatMs: config.LEASE_HEARTBEAT_MS,
      take: () => {
        let running: Promise<void> | undefined;
        const tick = () => {
          running ??= run()
            .then(() => undefined)
            .catch((error: unknown) => logger.warn({ err: error }, `${what} failed; it runs again at the next interval`))
            .finally(() => (running = undefined));
        };
        const timer = setInterval(tick, everyMs);
        return {
          stop: async () => {
            clearInterval(timer);
            await running;
          },
        };
      },
    });
    await this.group.start();
  }

  /** Stops taking runs, waits for the one in progress and hands the lease over. */
  async stop(): Promise<void> {
    await this.group?.stop();
  }
}
