export * from './body-hygiene.js';
export * from './echo.js';
export * from './reading-entries.js';
