import type { MigrationInterface, QueryRunner } from 'typeorm';
import { shipmentJsonFromLastPosition, shipmentJsonFunction, shipmentJsonHeadColumns, wholeShipmentJson } from './shipment-json.js';

/** `,"lastPosition":`, where the fields readings move begin: 16 bytes. */
const MARK = `',"lastPosition":'`;

/**
 * `shipments_api_json()` rewrites only the text's last two fields, `lastPosition` and `eta`, when nothing
 * else the text shows changed: every batch of readings moves its shipments' last position
 * (`ShipmentRepository.moveLastPositions`) and every evaluation with a destination stores an estimate
 * (`saveEstimates`), two updates per shipment and batch, and each formatted the whole shipment (up to
 * fourteen date-times through the called `api_json_date_time`) to change its end. The shared BEFORE UPDATE trigger
 * was the largest part of the extra PostgreSQL time with destinations in `bench:evaluation`
 * (docs/eta.md, "Cost"). The technique is the devices' (DMS migrations 1763900031200 and 1763900031300).
 *
 * The fast path keeps the old text up to the mark, cut with `split_part` (bytes, where `strpos` counts
 * characters in a UTF-8 database), and formats what follows with the dates inline; the text is the same as
 * the whole formatting writes. The mark cannot occur earlier in a text this function wrote: the strings
 * before it are escaped JSON (a quote inside is `\"`), tags are escaped JSON strings, and `metadata` and
 * `conditions` are jsonb, which PostgreSQL writes with a space after every comma. It is checked anyway,
 * in bytes: the mark must occur exactly once. Any other change, a NULL written to `api_json` (which asks
 * for the whole text) or a text that fails the check is formatted whole, as AddShipmentEta wrote it.
 */
export class MoveShipmentPositionInPlace1763800035000 implements MigrationInterface {
  name = 'MoveShipmentPositionInPlace1763800035000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const shown = shipmentJsonHeadColumns();
    await queryRunner.query(`
    CREATE OR REPLACE FUNCTION shipments_api_json() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      head text;
      tail text;
    BEGIN
      IF TG_OP = 'UPDATE' AND NEW.api_json IS NOT NULL AND NEW.api_json = OLD.api_json
        AND (${shown.map((column) => `NEW.${column}`).join(', ')})
          IS NOT DISTINCT FROM (${shown.map((column) => `OLD.${column}`).join(', ')}) THEN
        head := split_part(OLD.api_json, ${MARK}, 1);
        tail := split_part(OLD.api_json, ${MARK}, -1);
        -- The mark occurs once (its first occurrence is its last); without it both parts are the whole text.
        IF octet_length(head) + octet_length(${MARK}) + octet_length(tail) = octet_length(OLD.api_json) THEN
          NEW.api_json := head || ${shipmentJsonFromLastPosition()};
          RETURN NEW;
        END IF;
      END IF;
      NEW.api_json := ${wholeShipmentJson('AddShipmentEta')};
      RETURN NEW;
    END
    $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(shipmentJsonFunction('AddShipmentEta'));
  }
}
