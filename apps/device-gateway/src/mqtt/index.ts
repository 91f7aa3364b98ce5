export * from './failed-auth-limiter.js';
export * from './mqtt-listener.js';
export * from './mqtt-metrics.js';
