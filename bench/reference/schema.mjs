// The reference's one table, shared by server.mjs (which creates it when it starts on its own) and by
// bench/lib/reference.mjs (which fills it with a copy of the benchmark's shipments before the server starts).
// No dependencies, so that both sides can import it.

/** Column order of the table; `seq` is the keyset the pages follow. */
export const SHIPMENT_COLUMNS = ['seq', 'id', 'account_id', 'name', 'status', 'reference', 'created_at', 'updated_at'];

/** Statements that create the table and its paging index when they are missing. */
export const SCHEMA_STATEMENTS = [
  `CREATE TABLE IF NOT EXISTS shipment (
     seq        bigserial,
     id         uuid PRIMARY KEY,
     account_id uuid NOT NULL,
     name       text NOT NULL,
     status     text NOT NULL,
     reference  text,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now()
   )`,
  'CREATE INDEX IF NOT EXISTS shipment_account_seq ON shipment (account_id, seq)',
];
