import { type DynamicModule, Inject, Injectable, Module, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { EventSubjects, jetStreamName, ReadingSubjects } from '@tracking/contracts';
import type { ConfigOf, Logger } from '@tracking/core';
import { connectNats, type NatsConfig } from '@tracking/messaging';
import type { Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import type { outboxConfigSchema } from './outbox-config.js';
import { OutboxRelay } from './outbox-relay.js';
import { ensureStream, type StreamSettings } from './jetstream-setup.js';

export type OutboxConfig = NatsConfig & ConfigOf<typeof outboxConfigSchema>;

/** The NATS connection a process uses for JetStream (publishing the outbox, consuming streams). */
export const JETSTREAM_CONNECTION = Symbol('JETSTREAM_CONNECTION');
const OUTBOX_OPTIONS = Symbol('OUTBOX_OPTIONS');

export interface OutboxModuleOptions {
  /** The process, for its connection name (`oms`, `dms`, `worker`). */
  name: string;
  config: OutboxConfig;
  dataSource: DataSource;
  databaseUrl: string;
  logger: Logger;
  registry: Registry;
}

/** The events stream's settings from the configuration. */
export function eventsStreamSettings(config: OutboxConfig): StreamSettings {
  return {
    name: jetStreamName(config.NATS_SUBJECT_PREFIX, 'EVENTS'),
    subjects: [EventSubjects.all(config.NATS_SUBJECT_PREFIX)],
    maxAgeMs: config.EVENTS_STREAM_MAX_AGE_HOURS * 3600_000,
    duplicateWindowMs: config.EVENTS_STREAM_DUPLICATE_WINDOW_MS,
    replicas: config.JETSTREAM_REPLICAS,
  };
}

/**
 * The readings stream's settings (`<PREFIX>READINGS`, every `<prefix>readings.>` subject): the DMS
 * publishes on it, the OMS consumes it; both make sure of it with these settings.
 */
export function readingsStreamSettings(config: OutboxConfig): StreamSettings {
  return {
    name: jetStreamName(config.NATS_SUBJECT_PREFIX, 'READINGS'),
    subjects: [ReadingSubjects.all(config.NATS_SUBJECT_PREFIX)],
    maxAgeMs: config.READINGS_STREAM_MAX_AGE_HOURS * 3600_000,
    duplicateWindowMs: config.EVENTS_STREAM_DUPLICATE_WINDOW_MS,
    replicas: config.JETSTREAM_REPLICAS,
  };
}

/**
 * Makes sure the events stream exists, then relays this database's outbox (when OUTBOX_RELAY_ENABLED)
 * for as long as the process runs; stops the relay before the database closes.
 */
@Injectable()
export class OutboxRelayHost implements OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  private relay: OutboxRelay | undefined;
  private settingUp: Promise<void> | undefined;
  private stopping = false;

  constructor(
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Inject(JETSTREAM_CONNECTION) private readonly nats: NatsConnection,
  ) {}

  /**
   * Never fails the process: without JetStream (NATS down, JetStream off, permissions missing) changes
   * still commit with their events in the outbox; the relay's publications fail and are retried until
   * the stream is there, and the backlog shows in `outbox_backlog` and `outbox_oldest_age_seconds`.
   */
  async onApplicationBootstrap(): Promise<void> {
    const { config } = this.options;
    this.settingUp = this.setUpStream();
    if (!config.OUTBOX_RELAY_ENABLED) return;
    this.relay = new OutboxRelay({
      dataSource: this.options.dataSource,
      databaseUrl: this.options.databaseUrl,
      nats: this.nats,
      subjectPrefix: config.NATS_SUBJECT_PREFIX,
      logger: this.options.logger,
      registry: this.options.registry,
      pollIntervalMs: config.OUTBOX_POLL_INTERVAL_MS,
    });
    await this.relay.start();
  }

  /** Creates or updates the stream, trying again every few seconds until it succeeds or the process stops. */
  private async setUpStream(): Promise<void> {
    for (let attempt = 0; !this.stopping; attempt++) {
      try {
        await ensureStream(this.nats, eventsStreamSettings(this.options.config));
        return;
      } catch (error) {
        if (attempt === 0) this.options.logger.warn({ err: error }, 'cannot set up the events stream yet; retrying (events wait in the outbox)');
      }
      await new Promise((resolve) => setTimeout(resolve, 2000).unref());
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await this.relay?.stop();
    await this.settingUp;
    this.relay = undefined;
  }

  /** After every consumer stopped (they stop in onModuleDestroy). */
  async onApplicationShutdown(): Promise<void> {
    await this.nats.drain().catch(() => undefined);
  }
}

/** The outbox relay and the JetStream connection of one process; global, so that consumers can inject the connection. */
@Module({})
export class OutboxModule {
  static forRoot(options: OutboxModuleOptions): DynamicModule {
    return {
      module: OutboxModule,
      global: true,
      providers: [
        { provide: OUTBOX_OPTIONS, useValue: options },
        { provide: JETSTREAM_CONNECTION, useFactory: () => connectNats(options.config, `${options.name}-jetstream`) },
        OutboxRelayHost,
      ],
      exports: [JETSTREAM_CONNECTION],
    };
  }
}
