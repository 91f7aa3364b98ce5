export * from './ensure-database.js';
export * from './migrate.js';
export * from './data-source.js';
export * from './versioned-record.js';
export * from './versioning.js';
export * from './pg-errors.js';
export * from './migrate-command.js';
export * from './prepared-rows.js';
