/** Recognising PostgreSQL errors by SQLSTATE, whether raised by `pg` directly or wrapped by TypeORM. */

export function isPgError(error: unknown, code: string): error is Error & { code: string; constraint?: string } {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/** The constraint a PostgreSQL error of `code` was raised by, also when TypeORM wraps it; undefined for other errors. */
function violatedConstraint(error: unknown, code: string): string | undefined {
  if (isPgError(error, code)) return error.constraint ?? '';
  const driverError = (error as { driverError?: unknown } | null)?.driverError;
  if (driverError && isPgError(driverError, code)) return driverError.constraint ?? '';
  return undefined;
}

/** Whether `error` is a lock wait that ran out of `lock_timeout` (55P03), also when TypeORM wraps it. */
export function isLockTimeout(error: unknown): boolean {
  return violatedConstraint(error, '55P03') !== undefined;
}

/** The PostgreSQL constraint a unique violation (23505) was raised by, if `error` is one. */
export function uniqueViolation(error: unknown): string | undefined {
  return violatedConstraint(error, '23505');
}

/** The PostgreSQL constraint a foreign key violation (23503) was raised by, if `error` is one. */
export function foreignKeyViolation(error: unknown): string | undefined {
  return violatedConstraint(error, '23503');
}

/** SQLSTATEs that say the database cannot be reached or used right now, rather than that a statement is wrong. */
const UNAVAILABLE_SQLSTATES: ReadonlySet<string> = new Set([
  '53300', // too_many_connections (also a database's CONNECTION LIMIT)
  '57P01', // admin_shutdown: the session was terminated
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: the server is starting or shutting down
]);
/** Socket-level failures of the connection to the database server. */
const UNAVAILABLE_NODE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const RELEASED_QUERY_RUNNER: ReadonlySet<string> = new Set(['QueryRunnerAlreadyReleasedError', 'QueryRunnerProviderAlreadyReleasedError']);
/** What `pg` and its pool say, without a code, when a connection breaks or cannot be had in time. */
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|is not currently accepting connections|Client has encountered a connection error/i;

/**
 * Whether `error` says that the database is out of reach (down, restarting, refusing or dropping
 * connections, pool starved past its connection timeout) rather than that the request was wrong: class 08
 * and 57P0x SQLSTATEs, 53300, socket errors, `pg`'s connection messages and TypeORM's transaction that lost
 * its connection, also when TypeORM wraps them
 * (`driverError`) or they are another error's `cause`. Such a failure is worth retrying later: the API
 * answers it with 503, and the worker waits it out.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; typeof current === 'object' && current !== null && depth < 5; depth++) {
    const { code, message, name } = current as { code?: unknown; message?: unknown; name?: unknown };
    // TypeORM's words for a transaction whose connection `pg` dropped (terminated, reset) under it:
    // the query runner releases itself when its client fails, and the next statement meets it released.
    if (typeof name === 'string' && RELEASED_QUERY_RUNNER.has(name)) return true;
    if (typeof code === 'string' && (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_NODE_CODES.has(code))) return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message)) return true;
    const wrapper = current as { driverError?: unknown; cause?: unknown };
    current = wrapper.driverError ?? wrapper.cause;
  }
  return false;
}
