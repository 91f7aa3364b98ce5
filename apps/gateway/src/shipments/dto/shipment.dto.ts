import { ApiProperty, type ApiPropertyOptions, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { type Metadata, ShipmentStatus, TransportMode } from '@tracking/contracts';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayUnique, IsArray, IsBoolean, IsDefined, IsEnum, IsObject, IsOptional, IsString, IsUUID, Length, ValidateNested } from 'class-validator';
import { IsOmittable, METADATA_SCHEMA, PageMetadataDto } from '../../http/common.dto.js';
import { DATE_TIME_INPUT_DESCRIPTION, IsDateTime } from '../../http/date-time.validator.js';
import { IsMetadata } from '../../http/metadata.validator.js';
import { HasVisibleText } from '../../http/visible-text.validator.js';
import { ShipmentConditionsDto, ShipmentEtaDto, ShipmentExcursionsDto, ShipmentLastPositionDto } from './shipment-conditions.dto.js';

const MAX_TAGS = 20;
const EXAMPLE_TIME = '2025-11-22T08:30:00.000Z';

const NAME = { minLength: 1, maxLength: 200, example: 'Rotterdam to Lyon, week 48' } satisfies ApiPropertyOptions;
const REFERENCE = {
  type: String,
  nullable: true,
  minLength: 1,
  maxLength: 200,
  example: 'PO-2025-0042',
  description: 'Unique within the account when set.',
} satisfies ApiPropertyOptions;
const MODE = { enum: TransportMode, enumName: 'TransportMode', nullable: true, example: TransportMode.Road } satisfies ApiPropertyOptions;
const CARRIER = { type: String, nullable: true, minLength: 1, maxLength: 200, example: 'DHL Freight' } satisfies ApiPropertyOptions;
const PLACE = (example: string) =>
  ({ type: String, format: 'uuid', nullable: true, example, description: 'A point of interest of the same account.' }) satisfies ApiPropertyOptions;
const ORIGIN = PLACE('0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a');
const DESTINATION = PLACE('0190a4a0-6e3f-7d5c-8a2b-4c3d2e1f0a9b');
const TAGS = {
  type: 'array',
  maxItems: MAX_TAGS,
  uniqueItems: true,
  items: { type: 'string', minLength: 1, maxLength: 50 },
  example: ['fragile', 'priority'],
} satisfies ApiPropertyOptions;

const AUTO_TRANSITIONS = {
  type: Boolean,
  example: false,
  description:
    'When true, departing the origin starts a Planned shipment and arriving at the destination delivers an InTransit one, ' +
    'at the event times of the visit, exactly as the client\'s own start/deliver would.',
} satisfies ApiPropertyOptions;
const CONDITIONS = {
  type: ShipmentConditionsDto,
  nullable: true,
  description: 'What its readings must keep to (every part optional); crossing a bound opens an alert.',
} satisfies ApiPropertyOptions;

export class ShipmentDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a0-7f4a-7e6d-9b3c-5d4e3f2a1b0c' }) id: string;
  @ApiProperty(NAME) name: string;
  @ApiProperty(REFERENCE) reference: string | null;
  @ApiProperty({
    enum: ShipmentStatus,
    enumName: 'ShipmentStatus',
    example: ShipmentStatus.InTransit,
    description: 'Planned -> InTransit -> Delivered -> Completed; Planned or InTransit -> Cancelled.',
  })
  status: ShipmentStatus;
  @ApiProperty(MODE) mode: TransportMode | null;
  @ApiProperty(CARRIER) carrier: string | null;
  @ApiProperty(ORIGIN) originId: string | null;
  @ApiProperty(DESTINATION) destinationId: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2025-12-01T08:00:00.000Z' }) plannedDepartureAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2025-12-03T17:00:00.000Z' }) plannedArrivalAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: EXAMPLE_TIME, description: 'Set by start.' })
  departedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null, description: 'Set by deliver.' })
  deliveredAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null, description: 'Set by complete.' })
  completedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null, description: 'Set by cancel.' })
  cancelledAt: string | null;
  @ApiProperty(TAGS) tags: string[];
  @ApiProperty(METADATA_SCHEMA) metadata: Metadata;
  @ApiProperty({ format: 'date-time', example: EXAMPLE_TIME }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: EXAMPLE_TIME }) updatedAt: string;
  @ApiProperty(AUTO_TRANSITIONS) autoTransitions: boolean;
  @ApiProperty({ ...CONDITIONS, description: `${CONDITIONS.description} Shown with minDurationSeconds and both bounds of a range (null: none).` })
  conditions: ShipmentConditionsDto | null;
  @ApiProperty({
    type: ShipmentExcursionsDto,
    description:
      'Read-only, from the evaluation of readings: total event time out of range, each excursion counted from its first ' +
      'out-of-range reading to the first reading back in range. Changes neither updatedAt nor the ETag.',
  })
  excursions: ShipmentExcursionsDto;
  @ApiProperty({
    type: ShipmentLastPositionDto,
    nullable: true,
    description:
      'Read-only: the newest located reading (by recordedAt) of the devices while assigned to the shipment, within seconds ' +
      'of its batch; a late, older reading never moves it back. null until there is one. Changes neither updatedAt nor the ETag.',
  })
  lastPosition: ShipmentLastPositionDto | null;
  @ApiProperty({
    type: ShipmentEtaDto,
    nullable: true,
    description:
      'Read-only: the estimated arrival with its range, recomputed from each evaluated batch of positions (event time); from the plan ' +
      'until a position is known. null without destination, without plan or position, and from Delivered on. Changes neither updatedAt nor the ETag.',
  })
  eta: ShipmentEtaDto | null;
}

export class ShipmentPageDto {
  @ApiProperty({ type: [ShipmentDto] }) items: ShipmentDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

/** Every field but `name` may be left out; those shown as nullable may also be null. */
export class CreateShipmentDto {
  @ApiProperty(NAME)
  @IsDefined()
  @IsString()
  @Length(1, 200)
  @HasVisibleText()
  name: string;

  @ApiPropertyOptional({ ...REFERENCE, description: `${REFERENCE.description} 409 DuplicateReference otherwise.` })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  reference?: string | null;

  @ApiPropertyOptional(MODE)
  @IsOptional()
  @IsEnum(TransportMode)
  mode?: TransportMode | null;

  @ApiPropertyOptional(CARRIER)
  @IsOptional()
  @IsString()
  @Length(1, 200)
  carrier?: string | null;

  @ApiPropertyOptional({ ...ORIGIN, description: `${ORIGIN.description} 400 UnknownReference otherwise.` })
  @IsOptional()
  @IsUUID('all')
  originId?: string | null;

  @ApiPropertyOptional({ ...DESTINATION, description: `${DESTINATION.description} 400 UnknownReference otherwise.` })
  @IsOptional()
  @IsUUID('all')
  destinationId?: string | null;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    nullable: true,
    example: '2025-12-01T09:00:00+01:00',
    description: DATE_TIME_INPUT_DESCRIPTION,
  })
  @IsOptional()
  @IsDateTime()
  plannedDepartureAt?: string | null;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    nullable: true,
    example: '2025-12-03T17:00:00Z',
    description: `${DATE_TIME_INPUT_DESCRIPTION} Not before plannedDepartureAt (400 OutOfRange).`,
  })
  @IsOptional()
  @IsDateTime()
  plannedArrivalAt?: string | null;

  @ApiPropertyOptional({
    ...TAGS,
    description: 'Distinct strings (case-sensitive), kept in the order given. Left out: none on creation, unchanged by a PATCH.',
  })
  @IsOmittable()
  @IsArray()
  @ArrayMaxSize(MAX_TAGS)
  @ArrayUnique()
  @IsString({ each: true })
  @Length(1, 50, { each: true })
  tags?: string[];

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: `${METADATA_SCHEMA.description} Left out: {} on creation, unchanged by a PATCH.` })
  @IsOmittable()
  @IsMetadata()
  metadata?: Metadata;

  @ApiPropertyOptional({ ...AUTO_TRANSITIONS, description: `${AUTO_TRANSITIONS.description} Left out: false on creation, unchanged by a PATCH.` })
  @IsOmittable()
  @IsBoolean()
  autoTransitions?: boolean;

  @ApiPropertyOptional({
    ...CONDITIONS,
    description: `${CONDITIONS.description} Replaced whole by a PATCH; null clears them. Left out: null on creation, unchanged by a PATCH.`,
  })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => ShipmentConditionsDto)
  conditions?: ShipmentConditionsDto | null;
}

/**
 * Any subset of the fields of a creation. Omitted fields keep their value; nullable ones may be set
 * to null, the others (`name`, `tags`, `metadata`) may not. `tags` and `metadata` are replaced whole.
 */
export class UpdateShipmentDto extends PartialType(CreateShipmentDto, { skipNullProperties: false }) {}
