/**
 * The migrations that add fields to the shipment's stored JSON, oldest first: each writes
 * `shipments_api_json()` with the fields up to its own, and its `down` with those before it.
 */
const MIGRATIONS = ['CreateAlertsAndVisits', 'AddShipmentLastPosition', 'AddShipmentEta'] as const;
type FieldMigration = (typeof MIGRATIONS)[number];

/**
 * The JSON of `shipments_api_json()`, one field per line, in the order of `toShipment`; `since` names the
 * migration that added the field (none: StoreShipmentJson's). A later field is one more line here, one
 * more name above, a migration that calls `shipmentJsonFunction` with it, and a line in `toShipment`.
 */
const SHIPMENT_JSON_FIELDS: { sql: string; since?: FieldMigration }[] = [
  { sql: `'{"id":"' || NEW.id || '"'` },
  { sql: `',"name":' || api_json_string(NEW.name)` },
  { sql: `',"reference":' || api_json_string(NEW.reference)` },
  { sql: `',"status":' || api_json_string(NEW.status)` },
  { sql: `',"mode":' || api_json_string(NEW.mode)` },
  { sql: `',"carrier":' || api_json_string(NEW.carrier)` },
  { sql: `',"originId":' || api_json_string(NEW.origin_id::text)` },
  { sql: `',"destinationId":' || api_json_string(NEW.destination_id::text)` },
  { sql: `',"plannedDepartureAt":' || api_json_date_time(NEW.planned_departure_at)` },
  { sql: `',"plannedArrivalAt":' || api_json_date_time(NEW.planned_arrival_at)` },
  { sql: `',"departedAt":' || api_json_date_time(NEW.departed_at)` },
  { sql: `',"deliveredAt":' || api_json_date_time(NEW.delivered_at)` },
  { sql: `',"completedAt":' || api_json_date_time(NEW.completed_at)` },
  { sql: `',"cancelledAt":' || api_json_date_time(NEW.cancelled_at)` },
  { sql: `',"tags":' || array_to_json(NEW.tags)::text` },
  { sql: `',"metadata":' || NEW.metadata::text` },
  { sql: `',"createdAt":' || api_json_date_time(NEW.created_at)` },
  { sql: `',"updatedAt":' || api_json_date_time(NEW.updated_at)` },
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
    sql:
      `',"lastPosition":' || CASE WHEN NEW.last_position_recorded_at IS NULL THEN 'null' ELSE ` +
      `'{"lat":' || NEW.last_position_lat::text || ',"lng":' || NEW.last_position_lng::text || ` +
      `',"accuracyMeters":' || coalesce(NEW.last_position_accuracy_meters::text, 'null') || ` +
      `',"recordedAt":' || api_json_date_time(NEW.last_position_recorded_at) || ',"deviceId":"' || NEW.last_position_device_id || '"}' END`,
    since: 'AddShipmentLastPosition',
  },
  {
    // As `etaOf` (shipment-events.ts): the stored estimate while it is for the current destination, else the plan.
    sql:
      `',"eta":' || CASE WHEN NEW.status NOT IN ('Planned', 'InTransit') OR NEW.destination_id IS NULL THEN 'null' ` +
      `WHEN NEW.eta_arrival_at IS NOT NULL AND NEW.eta_destination_id = NEW.destination_id THEN ` +
      `'{"arrivalAt":' || api_json_date_time(NEW.eta_arrival_at) || ',"earliestAt":' || api_json_date_time(NEW.eta_earliest_at) || ` +
      `',"latestAt":' || api_json_date_time(NEW.eta_latest_at) || ',"remainingMeters":' || coalesce(NEW.eta_remaining_meters::text, 'null') || ` +
      `',"basis":' || api_json_string(NEW.eta_basis) || ',"asOf":' || api_json_date_time(NEW.eta_as_of) || ` +
      `',"calculatedAt":' || api_json_date_time(NEW.eta_calculated_at) || '}' ` +
      `WHEN NEW.planned_arrival_at IS NOT NULL THEN ` +
      `'{"arrivalAt":' || api_json_date_time(NEW.planned_arrival_at) || ',"earliestAt":' || api_json_date_time(NEW.planned_arrival_at) || ` +
      `',"latestAt":' || api_json_date_time(NEW.planned_arrival_at) || ',"remainingMeters":null,"basis":"Planned","asOf":null' || ` +
      `',"calculatedAt":' || api_json_date_time(NEW.updated_at) || '}' ` +
      `ELSE 'null' END`,
    since: 'AddShipmentEta',
  },
  { sql: `'}'` },
];

/** `shipments_api_json()` with the fields up to `migration`'s (undefined: those before every one of them). */
export function shipmentJsonFunction(migration: FieldMigration | undefined): string {
  const last = migration === undefined ? -1 : MIGRATIONS.indexOf(migration);
  const fields = SHIPMENT_JSON_FIELDS.filter((field) => field.since === undefined || MIGRATIONS.indexOf(field.since) <= last);
  return `
    CREATE OR REPLACE FUNCTION shipments_api_json() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.api_json :=
        ${fields.map((field) => field.sql).join(' ||\n        ')};
      RETURN NEW;
    END
    $$`;
}
