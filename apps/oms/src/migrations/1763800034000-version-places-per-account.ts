import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The statement that bumps the version of every account among `changed` (a query of tenant and account ids). */
const bump = (changed: string) => `
      INSERT INTO points_of_interest_versions AS v (tenant_id, account_id, version)
        SELECT tenant_id, account_id, nextval('points_of_interest_version_seq')
          FROM (SELECT DISTINCT tenant_id, account_id FROM (${changed}) AS rows) AS accounts
          ORDER BY tenant_id, account_id
        ON CONFLICT (tenant_id, account_id) DO UPDATE SET version = EXCLUDED.version`;

/**
 * A version of each account's places, for the evaluation's cache of places (docs/geofence-evaluation.md,
 * "Places"): `PlaceCache` read the account's places' number and newest `updated_at` on every lookup
 * (`count(*)` over all the account's places, 5000 in `npm run bench:evaluation`), the statement most often
 * seen in the OMS database's sampled backends with destinations. It now reads one row by its primary key:
 * in pgbench on the benchmark's OMS database (one account, 5000 places; 2026-11-27, load 4.3 to 4.5) 0.03 ms
 * a lookup against 1.2 ms for the count (BENCHMARKS.md, "Estimated arrival", "Cost", has the pairs).
 *
 * Statement-level triggers with transition tables (PostgreSQL allows them for one event per trigger, hence
 * three) set the version of every account whose places a statement inserted, updated or deleted, bulk
 * statements included, to a new value of one sequence, in the statement's own transaction: the new version
 * commits with the change, never before or after it. A value is never given twice, so a version a cache
 * holds cannot come back, even for a row deleted and made again. Two transactions changing the same
 * account's places take the version row's lock one after the other; it is taken at the end of the
 * statement, accounts in id order, so a statement that touches one account (every API write) takes it as
 * its transaction's last lock and cannot deadlock on it. TRUNCATE gives every account a new version.
 * Existing accounts get their row here, after the triggers exist (creating them locks out writers until
 * this commits); an account without a row has had no places since.
 */
export class VersionPlacesPerAccount1763800034000 implements MigrationInterface {
  name = 'VersionPlacesPerAccount1763800034000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE SEQUENCE points_of_interest_version_seq');
    await queryRunner.query(`
      CREATE TABLE points_of_interest_versions (
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        version bigint NOT NULL,
        PRIMARY KEY (tenant_id, account_id)
      )`);
    await queryRunner.query(`CREATE FUNCTION points_of_interest_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN${bump('SELECT tenant_id, account_id FROM new_places')};
        ELSIF TG_OP = 'UPDATE' THEN${bump('SELECT tenant_id, account_id FROM old_places UNION ALL SELECT tenant_id, account_id FROM new_places')};
        ELSIF TG_OP = 'DELETE' THEN${bump('SELECT tenant_id, account_id FROM old_places')};
        ELSE
          UPDATE points_of_interest_versions SET version = nextval('points_of_interest_version_seq');
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER points_of_interest_version_insert AFTER INSERT ON points_of_interest
      REFERENCING NEW TABLE AS new_places FOR EACH STATEMENT EXECUTE FUNCTION points_of_interest_bump_version()`);
    await queryRunner.query(`CREATE TRIGGER points_of_interest_version_update AFTER UPDATE ON points_of_interest
      REFERENCING OLD TABLE AS old_places NEW TABLE AS new_places FOR EACH STATEMENT EXECUTE FUNCTION points_of_interest_bump_version()`);
    await queryRunner.query(`CREATE TRIGGER points_of_interest_version_delete AFTER DELETE ON points_of_interest
      REFERENCING OLD TABLE AS old_places FOR EACH STATEMENT EXECUTE FUNCTION points_of_interest_bump_version()`);
    await queryRunner.query(`CREATE TRIGGER points_of_interest_version_truncate AFTER TRUNCATE ON points_of_interest
      FOR EACH STATEMENT EXECUTE FUNCTION points_of_interest_bump_version()`);
    await queryRunner.query(bump('SELECT tenant_id, account_id FROM points_of_interest'));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const event of ['insert', 'update', 'delete', 'truncate']) {
      await queryRunner.query(`DROP TRIGGER points_of_interest_version_${event} ON points_of_interest`);
    }
    await queryRunner.query('DROP FUNCTION points_of_interest_bump_version()');
    await queryRunner.query('DROP TABLE points_of_interest_versions');
    await queryRunner.query('DROP SEQUENCE points_of_interest_version_seq');
  }
}
