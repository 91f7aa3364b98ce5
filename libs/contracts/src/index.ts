export * from './errors.js';
export * from './subjects.js';
export * from './paging.js';
export * from './oms/shipments.js';
export * from './oms/common.js';
export * from './oms/points-of-interest.js';
export * from './oms/sets.js';
export * from './oms/items.js';
