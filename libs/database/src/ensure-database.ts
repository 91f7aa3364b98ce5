import pg from 'pg';

/** Creates the database named in `url` when it does not exist yet; safe when replicas race. */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) throw new Error('The database URL names no database');
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const client = new pg.Client({ connectionString: maintenance.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return;
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
    } catch (error) {
      // 42P04 duplicate_database, 23505 unique_violation: another replica created it first.
      if (!isPgError(error, '42P04') && !isPgError(error, '23505')) throw error;
    }
  } finally {
    await client.end();
  }
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

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
