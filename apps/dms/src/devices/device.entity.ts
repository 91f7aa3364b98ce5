import type { DeviceStatus, Metadata } from '@tracking/contracts';
import { VersionedRecord } from '@tracking/database';
import { Column, Entity } from 'typeorm';

/**
 * A device's row. The table also holds `api_json`, the device as the API shows it, which a trigger
 * writes on every insert and update; the entity leaves it out, and only the device list selects it.
 */
@Entity({ name: 'devices' })
export class DeviceEntity extends VersionedRecord {
  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ name: 'serial_number', type: 'text' })
  serialNumber: string;

  @Column({ type: 'text' })
  model: string;

  @Column({ type: 'text' })
  status: DeviceStatus;

  /** The assignment link (migration 1763800004000): set exactly while the status is Assigned. */
  @Column({ name: 'shipment_id', type: 'uuid', nullable: true })
  shipmentId: string | null;

  @Column({ name: 'set_id', type: 'uuid', nullable: true })
  setId: string | null;

  @Column({ name: 'firmware_version', type: 'text', nullable: true })
  firmwareVersion: string | null;

  @Column({ name: 'battery_level', type: 'double precision', nullable: true })
  batteryLevel: number | null;

  /**
   * The event time each last known field holds (migration 1763800011000): a reading moves a field only
   * when it was recorded later; a client's write counts as known at the moment of the write.
   */
  @Column({ name: 'battery_level_recorded_at', type: 'timestamptz', nullable: true })
  batteryLevelRecordedAt: Date | null;

  @Column({ name: 'last_seen_at', type: 'timestamptz', nullable: true })
  lastSeenAt: Date | null;

  @Column({ name: 'last_location_lat', type: 'double precision', nullable: true })
  lastLocationLat: number | null;

  @Column({ name: 'last_location_lng', type: 'double precision', nullable: true })
  lastLocationLng: number | null;

  @Column({ name: 'last_location_accuracy_meters', type: 'double precision', nullable: true })
  lastLocationAccuracyMeters: number | null;

  @Column({ name: 'last_location_recorded_at', type: 'timestamptz', nullable: true })
  lastLocationRecordedAt: Date | null;

  @Column({ type: 'jsonb' })
  metadata: Metadata;

  @Column({ name: 'retired_at', type: 'timestamptz', nullable: true })
  retiredAt: Date | null;
}
