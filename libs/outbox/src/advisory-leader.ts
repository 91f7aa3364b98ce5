import type { Logger } from '@tracking/core';
import pg from 'pg';

export interface AdvisoryLeaderOptions {
  databaseUrl: string;
  /** The lock's name; every process that runs the same work uses the same one. */
  lock: string;
  logger: Logger;
  /** How often a process that is not the leader tries to become it. */
  retryMs?: number;
  /** Called once this process holds the lock; the work runs until `lead`'s `stop` is called. */
  lead: () => Promise<{ stop: () => Promise<void> }>;
}

/**
 * Runs work on one process at a time among all that share a lock: a session-level advisory lock on a
 * connection of its own. The others try again every `retryMs`; when the leader dies its connection
 * closes, the lock goes with it and another process takes over. When the lock's connection is lost the
 * work stops at once (another process may already have taken over).
 */
export class AdvisoryLeader {
  private client: pg.Client | undefined;
  private work: { stop: () => Promise<void> } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private attempt: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: AdvisoryLeaderOptions) {}

  start(): void {
    this.attempt = this.tryToLead();
  }

  get leading(): boolean {
    return this.work !== undefined;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.attempt = this.tryToLead();
    }, this.options.retryMs ?? 2000);
    this.timer.unref();
  }

  private async tryToLead(): Promise<void> {
    let client: pg.Client | undefined;
    try {
      client = new pg.Client({ connectionString: this.options.databaseUrl, application_name: `leader:${this.options.lock}` });
      client.on('error', () => undefined);
      await client.connect();
      const { rows } = await client.query<{ held: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS held', [this.options.lock]);
      if (!rows[0]?.held || this.stopped) {
        await client.end();
        this.schedule();
        return;
      }
      this.client = client;
      client.on('end', () => void this.lose());
      const work = await this.options.lead();
      if (this.client !== client) {
        // The lock's connection ended while the work was starting (`lose` found no work to stop and
        // already scheduled the next try): stop it now, since another process may lead already.
        await work.stop();
        return;
      }
      this.work = work;
      if (this.stopped) await this.release();
    } catch (error) {
      this.options.logger.warn({ err: error, lock: this.options.lock }, 'cannot take the lead yet; retrying');
      await client?.end().catch(() => undefined);
      if (this.client === client) this.client = undefined;
      this.schedule();
    }
  }

  /** The lock's connection ended: stop the work at once, then try to lead again. */
  private async lose(): Promise<void> {
    if (!this.client || this.stopped) return;
    this.client = undefined;
    this.options.logger.warn({ lock: this.options.lock }, 'lost the lead (its database connection ended); stopping the work');
    const work = this.work;
    this.work = undefined;
    await work?.stop();
    this.schedule();
  }

  private async release(): Promise<void> {
    const work = this.work;
    this.work = undefined;
    await work?.stop();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** Stops the work (if leading) and gives the lead up. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.attempt;
    await this.release();
  }
}
