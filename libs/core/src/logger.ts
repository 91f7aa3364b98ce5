import { pino, type Logger } from 'pino';
import { currentRequestId } from './request-context.js';

export type { Logger } from 'pino';

/**
 * The JSON logger of every process; `LOG_LEVEL` (default `info`, `silent` in tests) sets its level.
 * A line written on behalf of a request (`runInRequestContext`) carries its `requestId`.
 */
export function createLogger(service: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: requestIdOfContext,
    redact: {
      paths: [
        'applicationSecret',
        '*.applicationSecret',
        '*.*.applicationSecret',
        'authorization',
        '*.authorization',
        '*.headers.authorization',
        '*.*.headers.authorization',
      ],
      censor: '[redacted]',
    },
  });
}

function requestIdOfContext(): { requestId?: string } {
  const requestId = currentRequestId();
  return requestId === undefined ? {} : { requestId };
}
