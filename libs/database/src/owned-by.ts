/**
 * Whether a row read by its primary key alone belongs to the account and tenant asked for. Point reads
 * look rows up by `id` only and check the owner here: with the owner in the `WHERE` clause, a table that
 * was never analyzed lets PostgreSQL prefer the `(tenant_id, account_id, seq)` keyset index, which reads
 * the whole account (docs/query-plans.md). Ids are compared as UUIDs, whatever their case.
 */
export function ownedBy<T extends { accountId: string; tenantId: string }>(
  row: T | null,
  scope: { accountId: string; tenantId: string },
): T | null {
  if (row === null) return null;
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  return same(row.accountId, scope.accountId) && same(row.tenantId, scope.tenantId) ? row : null;
}
