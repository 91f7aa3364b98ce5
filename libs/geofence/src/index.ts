export * from './geo.js';
export * from './place-index.js';
export * from './types.js';
export * from './engine.js';
