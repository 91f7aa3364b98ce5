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
