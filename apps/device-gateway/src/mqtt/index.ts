export * from './mqtt-listener.js';
export * from './mqtt-metrics.js';
