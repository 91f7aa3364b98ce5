import { inlineJsonDateTime as dateTime } from '@tracking/database';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { MoveDeviceJsonInPlace1763900031200, ONLY_LAST_KNOWN_CHANGED, WHOLE } from './1763900031200-move-device-json-in-place.js';

/** The fields of a device's JSON between `batteryLevel` and `lastLocation`, those readings move (as 1763900031200). */
const LAST_KNOWN = `',"batteryLevel":' || api_json_number(NEW.battery_level) ||
        ',"lastSeenAt":' || ${dateTime('NEW.last_seen_at')} ||
        ',"lastLocation":' || CASE
          WHEN NEW.last_location_lat IS NULL OR NEW.last_location_lng IS NULL THEN 'null'
          ELSE '{"lat":' || api_json_number(NEW.last_location_lat) || ',"lng":' || api_json_number(NEW.last_location_lng) ||
              ',"accuracyMeters":' || api_json_number(NEW.last_location_accuracy_meters) ||
              ',"recordedAt":' || ${dateTime('NEW.last_location_recorded_at')} || '}'
        END`;

/**
 * The fast path of `devices_api_json()` (1763900031200), which runs once per device and batch of readings,
 * so once per reading of an MQTT tracker, made cheaper; the text it writes is the same.
 * - The two dates are formatted in the function's own expression: `api_json_date_time` is declared
 *   immutable around the stable `to_char`, so the planner never inlines it and every call ran the SQL
 *   function executor.
 * - The text is cut with `split_part`, which works in bytes, where `strpos`, `left` and `substr` count
 *   characters one by one in a UTF-8 database (the old version counted the text four times). The head is
 *   what comes before the first `,"batteryLevel":`, the tail what comes after the last `,"metadata":`, and
 *   the checks are in bytes: the battery mark comes first, and the metadata mark occurs exactly once (its
 *   first occurrence is its last). As before, neither mark can occur earlier in a text this function wrote
 *   (the fields before them are escaped JSON strings), nor later (PostgreSQL writes jsonb with a space after
 *   every comma and colon, and the dates after it are fixed formats); a text that fails the checks is
 *   formatted whole. (`split_part` with a negative field needs PostgreSQL 14.)
 * Measured in pgbench, a 1000-row last known update on 2000 devices: 24.4 → 16.3 ms, against about 10 ms with
 * an empty trigger (BENCHMARKS.md, "The device gateway through the whole stack").
 */
export class CutDeviceJsonByBytes1763900031300 implements MigrationInterface {
  name = 'CutDeviceJsonByBytes1763900031300';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
    CREATE OR REPLACE FUNCTION devices_api_json() RETURNS trigger LANGUAGE plpgsql SET extra_float_digits = 1 AS $$
    DECLARE
      head text;
      before text;
      after text;
    BEGIN
      IF ${ONLY_LAST_KNOWN_CHANGED} THEN
        -- Before the first ',"batteryLevel":', before the first and after the last ',"metadata":': bytes.
        head := split_part(OLD.api_json, ',"batteryLevel":', 1);
        before := split_part(OLD.api_json, ',"metadata":', 1);
        after := split_part(OLD.api_json, ',"metadata":', -1);
        -- The battery mark comes first, and the metadata mark occurs once (its first is its last).
        IF octet_length(head) < octet_length(before) AND octet_length(before) + 12 + octet_length(after) = octet_length(OLD.api_json) THEN
          NEW.api_json := head || ${LAST_KNOWN} || ',"metadata":' || after;
          RETURN NEW;
        END IF;
      END IF;
      -- The whole text, as 1763900031200 formats it.
      NEW.api_json := ${WHOLE};
      RETURN NEW;
    END
    $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // 1763900031200's function, as its own migration writes it.
    await new MoveDeviceJsonInPlace1763900031200().up(queryRunner);
  }
}
