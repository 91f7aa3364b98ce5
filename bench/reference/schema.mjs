// The reference's tables, shared by server.mjs (which creates them when it starts on its own) and by
// bench/lib/reference.mjs (which fills them with a copy of the benchmark's rows before the server starts).
// No dependencies, so that both sides can import it.

/**
 * Column order of the shipment table; `seq` is the keyset the pages follow, `api_json` the shipment as
 * the API shows it (the text our OMS stores and answers), so that the reference answers the same bytes.
 */
export const SHIPMENT_COLUMNS = ['seq', 'id', 'account_id', 'name', 'status', 'reference', 'created_at', 'updated_at', 'api_json'];
export const SHIPMENT_TYPES = ['bigint', 'uuid', 'uuid', 'text', 'text', 'text', 'timestamptz', 'timestamptz', 'text'];

/** Column order of the device table: the device as the API shows it, under the account's paging order. */
export const DEVICE_COLUMNS = ['seq', 'id', 'account_id', 'api_json'];
export const DEVICE_TYPES = ['bigint', 'uuid', 'uuid', 'text'];

/** Statements that create the tables and their paging indexes when they are missing. */
export const SCHEMA_STATEMENTS = [
  `CREATE TABLE IF NOT EXISTS shipment (
     seq        bigserial,
     id         uuid PRIMARY KEY,
     account_id uuid NOT NULL,
     name       text NOT NULL,
     status     text NOT NULL,
     reference  text,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now(),
     api_json   text NOT NULL
   )`,
  'CREATE INDEX IF NOT EXISTS shipment_account_seq ON shipment (account_id, seq)',
  `CREATE TABLE IF NOT EXISTS device (
     seq        bigserial,
     id         uuid PRIMARY KEY,
     account_id uuid NOT NULL,
     api_json   text NOT NULL
   )`,
  'CREATE INDEX IF NOT EXISTS device_account_seq ON device (account_id, seq)',
];
