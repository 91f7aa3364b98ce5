import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetStreamName } from '@tracking/contracts';

/** A plain NATS connection to the local server, for what tests do on JetStream directly. */
export function connectTestNats(): Promise<NatsConnection> {
  return connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222', name: 'test' });
}

/**
 * Deletes every stream of a subject prefix (its consumers go with it), so that runs leave nothing on the
 * local server. An empty prefix names every stream: nothing is deleted then (such stacks run their own server).
 */
export async function deleteStreams(subjectPrefix: string): Promise<void> {
  if (subjectPrefix === '') return;
  const nats = await connectTestNats();
  try {
    const jsm = await jetstreamManager(nats);
    const mine = jetStreamName(subjectPrefix, '');
    for await (const name of jsm.streams.names()) {
      if (name.startsWith(mine)) await jsm.streams.delete(name);
    }
  } finally {
    await nats.close();
  }
}

/** How many messages a stream holds now. */
export async function streamMessages(subjectPrefix: string, stream: string): Promise<number> {
  const nats = await connectTestNats();
  try {
    const jsm = await jetstreamManager(nats);
    return (await jsm.streams.info(jetStreamName(subjectPrefix, stream))).state.messages;
  } finally {
    await nats.close();
  }
}

/** Streams of test runs (`test_...`) created more than `hours` ago: runs killed before their teardown. */
export async function deleteStaleTestStreams(hours = 6): Promise<void> {
  const nats = await connectTestNats().catch(() => undefined);
  if (!nats) return;
  try {
    const jsm = await jetstreamManager(nats);
    const before = Date.now() - hours * 3600_000;
    for await (const info of jsm.streams.list()) {
      if (info.config.name.startsWith('test_') && Date.parse(info.created) < before) await jsm.streams.delete(info.config.name);
    }
  } finally {
    await nats.close();
  }
}
