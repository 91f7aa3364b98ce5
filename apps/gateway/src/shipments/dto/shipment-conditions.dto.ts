import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { EtaBasis } from '@tracking/contracts';
import { Type } from 'class-transformer';
import { IsDefined, IsInt, IsNumber, IsObject, IsOptional, Max, Min, ValidateNested } from 'class-validator';
import { FINITE, IsOmittable } from '../../http/common.dto.js';

/** The longest `minDurationSeconds` of a range: a day. */
export const MAX_MIN_DURATION_SECONDS = 86400;
/** The longest `maxSilenceSeconds`: a week. */
export const MAX_SILENCE_SECONDS = 604800;

const MIN_DURATION = {
  type: 'integer',
  minimum: 0,
  maximum: MAX_MIN_DURATION_SECONDS,
  example: 300,
  description: 'How long (event time) readings must stay out of range before an alert opens. Left out: 0.',
} as const;

/** A bound that may be left out or null (no bound on that side); the other side's bound may be given alone. */
const Bound = (min: number, max: number) => [IsOptional(), IsNumber(FINITE), Min(min), Max(max)];
function applyAll(decorators: PropertyDecorator[]): PropertyDecorator {
  return (target, key) => decorators.forEach((decorator) => decorator(target, key));
}

export class TemperatureConditionDto {
  @ApiPropertyOptional({ type: Number, nullable: true, minimum: -100, maximum: 150, example: 2, description: 'Below it: TemperatureLow.' })
  @applyAll(Bound(-100, 150))
  minC?: number | null;

  @ApiPropertyOptional({ type: Number, nullable: true, minimum: -100, maximum: 150, example: 8, description: 'Above it: TemperatureHigh. Not below minC.' })
  @applyAll(Bound(-100, 150))
  maxC?: number | null;

  @ApiPropertyOptional(MIN_DURATION)
  @IsOmittable()
  @IsInt()
  @Min(0)
  @Max(MAX_MIN_DURATION_SECONDS)
  minDurationSeconds?: number;
}

export class HumidityConditionDto {
  @ApiPropertyOptional({ type: Number, nullable: true, minimum: 0, maximum: 100, example: 20, description: 'Below it: HumidityLow.' })
  @applyAll(Bound(0, 100))
  minPercent?: number | null;

  @ApiPropertyOptional({ type: Number, nullable: true, minimum: 0, maximum: 100, example: 70, description: 'Above it: HumidityHigh. Not below minPercent.' })
  @applyAll(Bound(0, 100))
  maxPercent?: number | null;

  @ApiPropertyOptional(MIN_DURATION)
  @IsOmittable()
  @IsInt()
  @Min(0)
  @Max(MAX_MIN_DURATION_SECONDS)
  minDurationSeconds?: number;
}

export class ShockConditionDto {
  @ApiProperty({ type: Number, minimum: 0, maximum: 1000, example: 4, description: 'A reading above it: one Shock alert per excursion.' })
  @IsDefined()
  @IsNumber(FINITE)
  @Min(0)
  @Max(1000)
  maxG: number;
}

export class LightConditionDto {
  @ApiProperty({ type: Number, minimum: 0, maximum: 200000, example: 50, description: 'A reading above it: one Light alert per excursion.' })
  @IsDefined()
  @IsNumber(FINITE)
  @Min(0)
  @Max(200000)
  maxLux: number;
}

export class BatteryConditionDto {
  @ApiProperty({ type: Number, minimum: 0, maximum: 100, example: 15, description: 'A reading below it: BatteryLow.' })
  @IsDefined()
  @IsNumber(FINITE)
  @Min(0)
  @Max(100)
  minPercent: number;
}

export class SignalLossConditionDto {
  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: MAX_SILENCE_SECONDS,
    example: 1800,
    description: 'No reading received (server time) from any assigned device for this long while InTransit: SignalLoss.',
  })
  @IsDefined()
  @IsInt()
  @Min(1)
  @Max(MAX_SILENCE_SECONDS)
  maxSilenceSeconds: number;
}

const Part = <T>(type: () => new () => T) => applyAll([IsOmittable(), IsObject(), ValidateNested(), Type(type)]);

/**
 * What a shipment's readings must keep to; every part optional. A range needs at least one bound
 * (400 Required) and its minimum may not be above its maximum (400 OutOfRange).
 */
export class ShipmentConditionsDto {
  @ApiPropertyOptional({ type: TemperatureConditionDto, description: '°C; TemperatureLow / TemperatureHigh.' })
  @Part(() => TemperatureConditionDto)
  temperature?: TemperatureConditionDto;

  @ApiPropertyOptional({ type: HumidityConditionDto, description: 'Relative humidity, %; HumidityLow / HumidityHigh.' })
  @Part(() => HumidityConditionDto)
  humidity?: HumidityConditionDto;

  @ApiPropertyOptional({ type: ShockConditionDto })
  @Part(() => ShockConditionDto)
  shock?: ShockConditionDto;

  @ApiPropertyOptional({ type: LightConditionDto })
  @Part(() => LightConditionDto)
  light?: LightConditionDto;

  @ApiPropertyOptional({ type: BatteryConditionDto })
  @Part(() => BatteryConditionDto)
  battery?: BatteryConditionDto;

  @ApiPropertyOptional({ type: SignalLossConditionDto })
  @Part(() => SignalLossConditionDto)
  signalLoss?: SignalLossConditionDto;
}

export class ShipmentExcursionsDto {
  @ApiProperty({ type: Number, minimum: 0, example: 0, description: 'Seconds (millisecond precision) of event time out of the temperature range.' })
  temperatureSeconds: number;
  @ApiProperty({ type: Number, minimum: 0, example: 0, description: 'Seconds (millisecond precision) of event time out of the humidity range.' })
  humiditySeconds: number;
}

export class ShipmentLastPositionDto {
  @ApiProperty({ type: Number, minimum: -90, maximum: 90, example: 51.9225 }) lat: number;
  @ApiProperty({ type: Number, minimum: -180, maximum: 180, example: 4.47917 }) lng: number;
  @ApiProperty({ type: Number, nullable: true, minimum: 0, example: 12 }) accuracyMeters: number | null;
  @ApiProperty({ type: String, format: 'date-time', example: '2025-11-22T08:30:00.000Z', description: "The reading's recordedAt." }) recordedAt: string;
  @ApiProperty({ type: String, format: 'uuid', example: '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a', description: 'The device that recorded it.' })
  deviceId: string;
}

export class ShipmentEtaDto {
  @ApiProperty({ type: String, format: 'date-time', example: '2025-11-22T15:40:00.000Z', description: 'The estimated arrival at the edge of the destination.' })
  arrivalAt: string;
  @ApiProperty({ type: String, format: 'date-time', example: '2025-11-22T15:10:00.000Z', description: 'Earliest likely arrival (<= arrivalAt).' })
  earliestAt: string;
  @ApiProperty({ type: String, format: 'date-time', example: '2025-11-22T16:20:00.000Z', description: 'Latest likely arrival (>= arrivalAt).' })
  latestAt: string;
  @ApiProperty({
    type: Number,
    nullable: true,
    minimum: 0,
    example: 182400,
    description: "Great-circle metres from the newest position used to the edge of the destination's circle, times the lane's detour factor for History; null for Planned.",
  })
  remainingMeters: number | null;
  @ApiProperty({
    enum: EtaBasis,
    enumName: 'EtaBasis',
    example: EtaBasis.Position,
    description: "Planned: the plan (no position yet); Position: the track's moving speed and stops; History: the lane's completed trips (at least 3).",
  })
  basis: EtaBasis;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2025-11-22T12:05:00.000Z', description: 'recordedAt of the newest position used; null for Planned.' })
  asOf: string | null;
  @ApiProperty({ type: String, format: 'date-time', example: '2025-11-22T12:05:04.000Z', description: 'When the server made the estimate.' })
  calculatedAt: string;
}
