export * from './service-metrics.js';
export * from './readiness.js';
export * from './ops-config.js';
export * from './ops-server.js';
export * from './run-service.js';
