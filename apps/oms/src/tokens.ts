/** Injection tokens of values the OMS's modules share (the configuration, the logger). */
export const OMS_CONFIG = Symbol('OMS_CONFIG');
export const OMS_LOGGER = Symbol('OMS_LOGGER');
