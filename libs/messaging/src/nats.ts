// The NATS connection and request client, without Nest: what the device gateway (no Nest application)
// imports, as `@tracking/messaging/nats`. The package's own entry adds the Nest transport (`ServerNats`,
// `@Handles`, the RPC filter), which would load @nestjs/core, @nestjs/microservices and rxjs into it.
export * from './nats-rpc.client.js';
export * from './rpc-deadline.js';
export * from './rpc-metrics.js';
export * from './json-reply.js';
export * from './nats-connection.js';
