/** Injection tokens of values the DMS's modules share (the configuration, the logger). */
export const DMS_CONFIG = Symbol('DMS_CONFIG');
export const DMS_LOGGER = Symbol('DMS_LOGGER');
