export * from './domain-error.js';
export * from './config.js';
export * from './logger.js';
export * from './request-context.js';
export * from './nest-logger.js';
export * from './date-time.js';
export * from './lru-bound.js';
