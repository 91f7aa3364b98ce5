import pg from 'pg';
import type { TestStack } from './stack.js';

/** A client on the stack's OMS database, for what the API cannot do (yet) or must not see. */
export async function connectOms(stack: TestStack): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: stack.env.OMS_DATABASE_URL });
  await client.connect();
  return client;
}

export type ClosedStatus = 'Completed' | 'Cancelled';

const CLOSE = `UPDATE shipments
  SET status = $2,
      completed_at = CASE WHEN $2 = 'Completed' THEN now() END,
      cancelled_at = CASE WHEN $2 = 'Cancelled' THEN now() END,
      version = version + 1, updated_at = now()
  WHERE id = $1`;

/** Closes a shipment in the database, as `complete` or `cancel` would. */
export async function closeShipment(client: pg.ClientBase, shipmentId: string, status: ClosedStatus): Promise<void> {
  const result = await client.query(CLOSE, [shipmentId, status]);
  if (result.rowCount !== 1) throw new Error(`no shipment ${shipmentId} to close`);
}

/**
 * Sends `request` while another transaction holds the shipment `FOR UPDATE` and closes it, as a
 * lifecycle transition does, and commits that transaction once the request waits for a lock (or has
 * answered without waiting, which the caller's assertions then catch). Returns the request's answer.
 */
export async function duringClosingTransition<T>(
  stack: TestStack,
  shipmentId: string,
  status: ClosedStatus,
  request: () => Promise<T>,
): Promise<{ answer: T; waited: boolean }> {
  const transition = await connectOms(stack);
  const observer = await connectOms(stack);
  try {
    await transition.query('BEGIN');
    await transition.query('SELECT 1 FROM shipments WHERE id = $1 FOR UPDATE', [shipmentId]);
    await closeShipment(transition, shipmentId, status);
    let settled = false;
    const pending = request().finally(() => (settled = true));
    let waited = false;
    for (let attempt = 0; attempt < 400 && !settled && !waited; attempt++) {
      const { rows } = await observer.query<{ waiting: number }>(
        `SELECT count(*)::int AS waiting FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
      );
      waited = rows[0].waiting > 0;
      if (!waited) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await transition.query('COMMIT');
    return { answer: await pending, waited };
  } finally {
    await transition.end();
    await observer.end();
  }
}
