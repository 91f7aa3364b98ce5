/** Injection token of the gateway's validated configuration. */
export const GATEWAY_CONFIG = Symbol('GATEWAY_CONFIG');
/** Injection token of the gateway's pino logger. */
export const LOGGER = Symbol('LOGGER');
