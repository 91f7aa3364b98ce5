export * from './errors.js';
export * from './subjects.js';
export * from './paging.js';
export * from './oms/shipments.js';
