export * from './gcra.script.js';
export * from './rate-limit.config.js';
