export * from './prefixed-nats.server.js';
export * from './rpc-error.filter.js';
export * from './nats-rpc.client.js';
export * from './microservice.js';
export * from './rpc-metrics.js';
export * from './json-reply.js';
export * from './nats-connection.js';
export * from './handles.js';
