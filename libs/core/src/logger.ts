import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/** The JSON logger of every process; `LOG_LEVEL` (default `info`, `silent` in tests) sets its level. */
export function createLogger(service: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
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
