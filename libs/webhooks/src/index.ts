export * from './address-policy.js';
export * from './url-policy.js';
export * from './secret.js';
export * from './retry-schedule.js';
