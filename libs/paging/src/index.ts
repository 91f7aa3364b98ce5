export * from './cursor-codec.js';
export * from './keyset.js';
export * from './keyset-json.js';
