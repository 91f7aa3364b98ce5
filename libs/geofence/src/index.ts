export * from './geo.js';
export * from './place-index.js';
export * from './types.js';
export * from './engine.js';
export * from './eta/track.js';
export * from './eta/estimate.js';
