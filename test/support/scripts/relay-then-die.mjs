// A relay that dies (SIGKILL) after JetStream acknowledged its first batch and before it could mark the
// batch sent: the crash between "published" and "marked sent". Run by events.spec.ts with the stack's env.
import 'reflect-metadata';
import { connect } from '@nats-io/transport-node';
import { createLogger } from '@tracking/core';
import { OutboxRelay } from '@tracking/outbox';
import { DataSource } from 'typeorm';

const url = process.env.OMS_DATABASE_URL;
const dataSource = new DataSource({ type: 'postgres', url });
await dataSource.initialize();
const nats = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
const relay = new OutboxRelay({
  dataSource,
  databaseUrl: url,
  nats,
  subjectPrefix: process.env.NATS_SUBJECT_PREFIX ?? '',
  logger: createLogger('relay-then-die', 'silent'),
  afterPublish: (count) => {
    process.stdout.write(`published ${count}\n`);
    process.kill(process.pid, 'SIGKILL');
  },
});
await relay.start();
