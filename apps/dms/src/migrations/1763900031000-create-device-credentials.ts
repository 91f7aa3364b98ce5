import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Device credentials (docs/device-gateway.md, "Credentials"): how a tracker proves who it is to the
 * device gateway. A secret is kept only as its SHA-256 digest (a 256-bit random secret needs no slow hash).
 *
 * - Credentials go with their device: deleting the device deletes them (ON DELETE CASCADE).
 * - An identifier belongs to one device per protocol, system-wide; several `Mqtt` or `Http` credentials of
 *   that device may share it (secret rotation). That rule spans rows, so the service checks it under a
 *   transaction lock on the identifier; a `Teltonika` identifier (an IMEI) has one credential, which the
 *   partial unique index enforces outright.
 * - `device_credentials_identifier_idx` serves MQTT and Teltonika authentication (by protocol and identifier);
 *   `device_credentials_secret_digest_key` serves HTTP's, where a request may carry the secret alone (a
 *   bearer header or a `/t/{secret}/` URL): the digest of a 256-bit random secret names one credential.
 */
export class CreateDeviceCredentials1763900031000 implements MigrationInterface {
  name = 'CreateDeviceCredentials1763900031000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE device_credentials (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        tenant_id uuid NOT NULL,
        account_id uuid NOT NULL,
        device_id uuid NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
        protocol text NOT NULL CHECK (protocol IN ('Mqtt', 'Http', 'Teltonika')),
        identifier text NOT NULL,
        secret_digest bytea,
        created_at timestamptz NOT NULL,
        last_used_at timestamptz,
        CONSTRAINT device_credentials_secret_check CHECK ((protocol = 'Teltonika') = (secret_digest IS NULL))
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX device_credentials_device_seq_idx ON device_credentials (device_id, seq)');
    await queryRunner.query('CREATE INDEX device_credentials_identifier_idx ON device_credentials (protocol, identifier)');
    await queryRunner.query('CREATE UNIQUE INDEX device_credentials_secret_digest_key ON device_credentials (secret_digest) WHERE secret_digest IS NOT NULL');
    await queryRunner.query(
      "CREATE UNIQUE INDEX device_credentials_imei_key ON device_credentials (identifier) WHERE protocol = 'Teltonika'",
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE device_credentials');
  }
}
