import { VersionedRecord } from '@tracking/database';
import { Column, Entity } from 'typeorm';
import type { EtaBasis, Metadata, ShipmentConditions, ShipmentStatus, TransportMode } from '@tracking/contracts';

/**
 * A shipment's row. The table also holds `api_json`, the shipment as the API shows it, which a trigger
 * writes on every insert and update; the entity leaves it out, and only the hot reads of
 * `ShipmentRepository` select it.
 */
@Entity({ name: 'shipments' })
export class ShipmentEntity extends VersionedRecord {
  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text', nullable: true })
  reference: string | null;

  @Column({ type: 'text' })
  status: ShipmentStatus;

  @Column({ type: 'text', nullable: true })
  mode: TransportMode | null;

  @Column({ type: 'text', nullable: true })
  carrier: string | null;

  @Column({ name: 'origin_id', type: 'uuid', nullable: true })
  originId: string | null;

  @Column({ name: 'destination_id', type: 'uuid', nullable: true })
  destinationId: string | null;

  @Column({ name: 'planned_departure_at', type: 'timestamptz', nullable: true })
  plannedDepartureAt: Date | null;

  @Column({ name: 'planned_arrival_at', type: 'timestamptz', nullable: true })
  plannedArrivalAt: Date | null;

  @Column({ name: 'departed_at', type: 'timestamptz', nullable: true })
  departedAt: Date | null;

  @Column({ name: 'delivered_at', type: 'timestamptz', nullable: true })
  deliveredAt: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt: Date | null;

  @Column({ name: 'cancelled_at', type: 'timestamptz', nullable: true })
  cancelledAt: Date | null;

  @Column({ type: 'text', array: true })
  tags: string[];

  @Column({ type: 'jsonb' })
  metadata: Metadata;

  @Column({ name: 'auto_transitions', type: 'boolean' })
  autoTransitions: boolean;

  @Column({ type: 'jsonb', nullable: true })
  conditions: ShipmentConditions | null;

  /**
   * Excursion totals in milliseconds of event time, written only by `ShipmentRepository.addExcursion`
   * (never by `save`, so that a client's PATCH cannot write back a total it read before).
   */
  @Column({ name: 'excursion_temperature_ms', type: 'bigint', update: false, transformer: { to: (value: number) => value, from: (value: string) => Number(value) } })
  excursionTemperatureMs: number;

  @Column({ name: 'excursion_humidity_ms', type: 'bigint', update: false, transformer: { to: (value: number) => value, from: (value: string) => Number(value) } })
  excursionHumidityMs: number;

  /**
   * The newest located reading the shipment's devices recorded while assigned to it, written only by
   * `ShipmentRepository.moveLastPositions` (never inserted or saved here, so a PATCH cannot move it back).
   */
  @Column({ name: 'last_position_lat', type: 'float8', nullable: true, insert: false, update: false })
  lastPositionLat?: number | null;

  @Column({ name: 'last_position_lng', type: 'float8', nullable: true, insert: false, update: false })
  lastPositionLng?: number | null;

  @Column({ name: 'last_position_accuracy_meters', type: 'float8', nullable: true, insert: false, update: false })
  lastPositionAccuracyMeters?: number | null;

  @Column({ name: 'last_position_recorded_at', type: 'timestamptz', nullable: true, insert: false, update: false })
  lastPositionRecordedAt?: Date | null;

  @Column({ name: 'last_position_device_id', type: 'uuid', nullable: true, insert: false, update: false })
  lastPositionDeviceId?: string | null;

  /**
   * The newest estimated arrival the evaluation made (docs/eta.md) and the destination it was made for,
   * written only by `EtaRepository` (never inserted or saved here): derived from readings like `lastPosition`.
   */
  @Column({ name: 'eta_arrival_at', type: 'timestamptz', nullable: true, insert: false, update: false })
  etaArrivalAt?: Date | null;

  @Column({ name: 'eta_earliest_at', type: 'timestamptz', nullable: true, insert: false, update: false })
  etaEarliestAt?: Date | null;

  @Column({ name: 'eta_latest_at', type: 'timestamptz', nullable: true, insert: false, update: false })
  etaLatestAt?: Date | null;

  @Column({ name: 'eta_remaining_meters', type: 'float8', nullable: true, insert: false, update: false })
  etaRemainingMeters?: number | null;

  @Column({ name: 'eta_basis', type: 'text', nullable: true, insert: false, update: false })
  etaBasis?: EtaBasis | null;

  @Column({ name: 'eta_as_of', type: 'timestamptz', nullable: true, insert: false, update: false })
  etaAsOf?: Date | null;

  @Column({ name: 'eta_calculated_at', type: 'timestamptz', nullable: true, insert: false, update: false })
  etaCalculatedAt?: Date | null;

  @Column({ name: 'eta_destination_id', type: 'uuid', nullable: true, insert: false, update: false })
  etaDestinationId?: string | null;

  /** The `eta.arrivalAt` last published in `shipment.eta_changed` (null: none yet). */
  @Column({ name: 'eta_published_arrival_at', type: 'timestamptz', nullable: true, insert: false, update: false })
  etaPublishedArrivalAt?: Date | null;
}
