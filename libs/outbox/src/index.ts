export * from './outbox-table.js';
export * from './outbox-writer.js';
export * from './outbox-relay.js';
export * from './jetstream-setup.js';
export * from './durable-consumer.js';
export * from './outbox-config.js';
export * from './outbox.module.js';
export * from './advisory-leader.js';
