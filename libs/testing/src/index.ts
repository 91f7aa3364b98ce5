export * from './test-databases.js';
export * from './test-redis.js';
