import type { Logger } from '@tracking/core';
import pg from 'pg';

export interface PgListenerOptions {
  databaseUrl: string;
  channel: string;
  /** Called for each notification, and after each (re)connection. */
  onNotify: () => void;
  logger: Logger;
  /** Wait before connecting again after the connection was lost or refused. */
  retryMs?: number;
}

/**
 * `LISTEN` on one channel, on a connection of its own that comes back by itself after PostgreSQL restarts
 * or terminates it. Notifications sent while it was away are lost, so `onNotify` is also called once each
 * time it is listening again: the caller looks for what it may have missed.
 *
 * Written by hand (about 40 lines over `pg`): pg-listen, the library for this, has had no release since 2020
 * and gives up after a bounded number of reconnection attempts.
 */
export class PgListener {
  private client: pg.Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: PgListenerOptions) {}

  /** Connects in the background (and again whenever the connection is lost) until `close`. */
  start(): void {
    void this.connect();
  }

  private async connect(): Promise<void> {
    const { databaseUrl, channel, onNotify, logger, retryMs = 1000 } = this.options;
    const client = new pg.Client({ connectionString: databaseUrl, application_name: `listen ${channel}` });
    let gone = false;
    const lost = (error?: unknown) => {
      if (gone) return;
      gone = true;
      if (this.client === client) this.client = undefined;
      client.end().catch(() => undefined);
      if (this.closed) return;
      logger.warn({ err: error, channel }, 'notification listener lost its connection; connecting again');
      this.retry = setTimeout(() => void this.connect(), retryMs);
    };
    client.on('notification', () => onNotify());
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    } catch (error) {
      lost(error);
      return;
    }
    if (this.closed) return void client.end().catch(() => undefined);
    this.client = client;
    onNotify();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await this.client?.end().catch(() => undefined);
  }
}
