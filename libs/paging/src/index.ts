export * from './cursor-codec.js';
export * from './keyset.js';
