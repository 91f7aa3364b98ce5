import { DiscardPolicy, JetStreamApiCodes, JetStreamApiError, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/** Milliseconds as the nanoseconds JetStream's configuration takes. */
export function nanos(ms: number): number {
  return ms * 1_000_000;
}

export interface StreamSettings {
  name: string;
  subjects: string[];
  /** How long the stream keeps a message: the bound on how long a consumer may be down without losing any. */
  maxAgeMs: number;
  /** How long JetStream remembers a message id to drop a republished duplicate. */
  duplicateWindowMs: number;
  /** Copies of the stream in a JetStream cluster (1 on a single server). */
  replicas: number;
}

/**
 * Creates the stream, or brings an existing one to these settings; every process that publishes or
 * consumes calls it at start, so that the first one up creates it and a deploy with new settings updates it.
 */
export async function ensureStream(nats: NatsConnection, settings: StreamSettings): Promise<void> {
  const jsm = await jetstreamManager(nats);
  const config = {
    name: settings.name,
    subjects: settings.subjects,
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: nanos(settings.maxAgeMs),
    duplicate_window: nanos(Math.min(settings.duplicateWindowMs, settings.maxAgeMs)),
    num_replicas: settings.replicas,
  };
  const exists = await jsm.streams.info(settings.name).then(
    () => true,
    (error: unknown) => {
      if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return false;
      throw error;
    },
  );
  if (!exists) {
    // Idempotent for the same configuration, so replicas starting together may all try.
    await jsm.streams.add(config);
  } else {
    await jsm.streams.update(settings.name, config);
  }
}
