export * from './prefixed-nats.server.js';
export * from './rpc-error.filter.js';
export * from './microservice.js';
export * from './nats.js';
export * from './handles.js';
