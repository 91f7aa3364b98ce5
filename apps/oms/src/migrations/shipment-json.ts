import { inlineJsonDateTime } from '@tracking/database';

/**
 * The migrations that add fields to the shipment's stored JSON, oldest first: each writes
 * `shipments_api_json()` with the fields up to its own, and its `down` with those before it.
 */
const MIGRATIONS = ['CreateAlertsAndVisits', 'AddShipmentLastPosition', 'AddShipmentEta'] as const;
type FieldMigration = (typeof MIGRATIONS)[number];

/** Formats a `timestamptz` expression as the JSON of a date-time. */
type DateTime = (value: string) => string;

/** `api_json_date_time`, the SQL function StoreShipmentJson created: what every migration's whole text calls. */
const called: DateTime = (value) => `api_json_date_time(${value})`;

/** A field's SQL; with dates, a function of how they are formatted. */
type FieldSql = string | ((dateTime: DateTime) => string);

/**
 * The JSON of `shipments_api_json()`, one field per line, in the order of `toShipment`; `since` names the
 * migration that added the field (none: StoreShipmentJson's). A later field is one more line here, one
 * more name above, a migration that calls `shipmentJsonFunction` with it, and a line in `toShipment`.
 */
const SHIPMENT_JSON_FIELDS: { sql: FieldSql; since?: FieldMigration }[] = [
  { sql: `'{"id":"' || NEW.id || '"'` },
  { sql: `',"name":' || api_json_string(NEW.name)` },
  { sql: `',"reference":' || api_json_string(NEW.reference)` },
  { sql: `',"status":' || api_json_string(NEW.status)` },
  { sql: `',"mode":' || api_json_string(NEW.mode)` },
  { sql: `',"carrier":' || api_json_string(NEW.carrier)` },
  { sql: `',"originId":' || api_json_string(NEW.origin_id::text)` },
  { sql: `',"destinationId":' || api_json_string(NEW.destination_id::text)` },
  { sql: (dateTime) => `',"plannedDepartureAt":' || ${dateTime('NEW.planned_departure_at')}` },
  { sql: (dateTime) => `',"plannedArrivalAt":' || ${dateTime('NEW.planned_arrival_at')}` },
  { sql: (dateTime) => `',"departedAt":' || ${dateTime('NEW.departed_at')}` },
  { sql: (dateTime) => `',"deliveredAt":' || ${dateTime('NEW.delivered_at')}` },
  { sql: (dateTime) => `',"completedAt":' || ${dateTime('NEW.completed_at')}` },
  { sql: (dateTime) => `',"cancelledAt":' || ${dateTime('NEW.cancelled_at')}` },
  { sql: `',"tags":' || array_to_json(NEW.tags)::text` },
  { sql: `',"metadata":' || NEW.metadata::text` },
  { sql: (dateTime) => `',"createdAt":' || ${dateTime('NEW.created_at')}` },
  { sql: (dateTime) => `',"updatedAt":' || ${dateTime('NEW.updated_at')}` },
  { sql: `',"autoTransitions":' || CASE WHEN NEW.auto_transitions THEN 'true' ELSE 'false' END`, since: 'CreateAlertsAndVisits' },
  { sql: `',"conditions":' || coalesce(NEW.conditions::text, 'null')`, since: 'CreateAlertsAndVisits' },
  {
    // Milliseconds stored, seconds shown: 12500 -> 12.5, 0 -> 0 (as JavaScript's ms / 1000 writes them).
    sql:
      `',"excursions":{"temperatureSeconds":' || trim_scale(NEW.excursion_temperature_ms / 1000.0)::text || ` +
      `',"humiditySeconds":' || trim_scale(NEW.excursion_humidity_ms / 1000.0)::text || '}'`,
    since: 'CreateAlertsAndVisits',
  },
  {
    sql: (dateTime) =>
      `',"lastPosition":' || CASE WHEN NEW.last_position_recorded_at IS NULL THEN 'null' ELSE ` +
      `'{"lat":' || NEW.last_position_lat::text || ',"lng":' || NEW.last_position_lng::text || ` +
      `',"accuracyMeters":' || coalesce(NEW.last_position_accuracy_meters::text, 'null') || ` +
      `',"recordedAt":' || ${dateTime('NEW.last_position_recorded_at')} || ',"deviceId":"' || NEW.last_position_device_id || '"}' END`,
    since: 'AddShipmentLastPosition',
  },
  {
    // As `etaOf` (shipment-events.ts): the stored estimate while it is for the current destination, else the plan.
    sql: (dateTime) =>
      `',"eta":' || CASE WHEN NEW.status NOT IN ('Planned', 'InTransit') OR NEW.destination_id IS NULL THEN 'null' ` +
      `WHEN NEW.eta_arrival_at IS NOT NULL AND NEW.eta_destination_id = NEW.destination_id THEN ` +
      `'{"arrivalAt":' || ${dateTime('NEW.eta_arrival_at')} || ',"earliestAt":' || ${dateTime('NEW.eta_earliest_at')} || ` +
      `',"latestAt":' || ${dateTime('NEW.eta_latest_at')} || ',"remainingMeters":' || coalesce(NEW.eta_remaining_meters::text, 'null') || ` +
      `',"basis":' || api_json_string(NEW.eta_basis) || ',"asOf":' || ${dateTime('NEW.eta_as_of')} || ` +
      `',"calculatedAt":' || ${dateTime('NEW.eta_calculated_at')} || '}' ` +
      `WHEN NEW.planned_arrival_at IS NOT NULL THEN ` +
      `'{"arrivalAt":' || ${dateTime('NEW.planned_arrival_at')} || ',"earliestAt":' || ${dateTime('NEW.planned_arrival_at')} || ` +
      `',"latestAt":' || ${dateTime('NEW.planned_arrival_at')} || ',"remainingMeters":null,"basis":"Planned","asOf":null' || ` +
      `',"calculatedAt":' || ${dateTime('NEW.updated_at')} || '}' ` +
      `ELSE 'null' END`,
    since: 'AddShipmentEta',
  },
  { sql: `'}'` },
];

type Field = (typeof SHIPMENT_JSON_FIELDS)[number];

/** The fields up to `migration`'s (undefined: those before every one of them). */
function fieldsUpTo(migration: FieldMigration | undefined): Field[] {
  const last = migration === undefined ? -1 : MIGRATIONS.indexOf(migration);
  return SHIPMENT_JSON_FIELDS.filter((field) => field.since === undefined || MIGRATIONS.indexOf(field.since) <= last);
}

/** The fields' SQL joined into one text expression. */
function joined(fields: Field[], dateTime: DateTime): string {
  return fields.map((field) => (typeof field.sql === 'string' ? field.sql : field.sql(dateTime))).join(' ||\n        ');
}

/** The whole text as `migration`'s `shipments_api_json()` writes it (undefined: before every one of them). */
export function wholeShipmentJson(migration: FieldMigration | undefined): string {
  return joined(fieldsUpTo(migration), called);
}

/** AddShipmentEta's fields, split before `lastPosition`: the head, then the fields readings move and the brace. */
function splitAtLastPosition(): [head: Field[], tail: Field[]] {
  const fields = fieldsUpTo('AddShipmentEta');
  const at = fields.findIndex((field) => field.since === 'AddShipmentLastPosition');
  return [fields.slice(0, at), fields.slice(at)];
}

/**
 * The text from `,"lastPosition":` to its end as AddShipmentEta's `shipments_api_json()` writes it: the two
 * fields readings move (the last position, the estimate) and the closing brace, the dates formatted inline.
 */
export function shipmentJsonFromLastPosition(): string {
  return joined(splitAtLastPosition()[1], inlineJsonDateTime);
}

/** The columns the text before `,"lastPosition":` shows, read off its fields' SQL. */
export function shipmentJsonHeadColumns(): string[] {
  const sql = joined(splitAtLastPosition()[0], called);
  return [...new Set(sql.match(/(?<=\bNEW\.)[a-z_]+/g))];
}

/** `shipments_api_json()` with the fields up to `migration`'s (undefined: those before every one of them). */
export function shipmentJsonFunction(migration: FieldMigration | undefined): string {
  return `
    CREATE OR REPLACE FUNCTION shipments_api_json() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.api_json :=
        ${wholeShipmentJson(migration)};
      RETURN NEW;
    END
    $$`;
}
