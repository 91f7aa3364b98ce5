import { pino, type DestinationStream, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { ConfigError } from './config.js';
import { currentRequestId } from './request-context.js';

export type { Logger } from 'pino';

/** How log lines are written: `json` (one JSON object a line, for machines) or `pretty` (for people). */
export type LogFormat = 'json' | 'pretty';

/**
 * The logger of every process. `LOG_LEVEL` (default `info`, `silent` in tests) sets its level;
 * `LOG_FORMAT` (default `json`) its format: `pretty` writes one readable line per entry (time, level,
 * message, the other fields as compact JSON), which `npm start` uses. A line written on behalf of a
 * request (`runInRequestContext`) carries its `requestId`.
 */
export function createLogger(service: string, level = process.env.LOG_LEVEL ?? 'info', format = logFormat(process.env.LOG_FORMAT)): Logger {
  const options = {
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
  };
  return format === 'pretty' ? pino(options, prettyStream()) : pino(options);
}

/** Reads `LOG_FORMAT`; anything but `json`, `pretty` or unset stops the process, naming the variable. */
export function logFormat(raw: string | undefined): LogFormat {
  if (raw === undefined || raw === '' || raw === 'json') return 'json';
  if (raw === 'pretty') return 'pretty';
  throw new ConfigError('LOG_FORMAT', `must be json or pretty (got ${JSON.stringify(raw)})`);
}

/**
 * pino-pretty as a stream in this thread (not a transport worker): synchronous, so the last lines
 * before an exit are written like the JSON ones. The service name is left out: `npm start` prefixes
 * each line with it already.
 */
function prettyStream(): DestinationStream {
  return PinoPretty({
    sync: true,
    singleLine: true,
    colorize: process.stdout.isTTY === true || process.env.FORCE_COLOR !== undefined,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,service',
    destination: 1,
  });
}

function requestIdOfContext(): { requestId?: string } {
  const requestId = currentRequestId();
  return requestId === undefined ? {} : { requestId };
}
