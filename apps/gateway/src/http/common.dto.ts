import { ApiProperty, type ApiPropertyOptions, ApiPropertyOptional } from '@nestjs/swagger';
import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { IsDefined, IsNumber, Max, Min, ValidateIf } from 'class-validator';
import { METADATA_MAX_BYTES, METADATA_MAX_KEYS } from './metadata.validator.js';

/**
 * Optional, but not nullable: `@IsOptional` would also let `null` through to a column that
 * cannot hold it (https://github.com/typestack/class-validator/issues/686).
 */
export const IsOmittable = () => ValidateIf((_object: object, value: unknown) => value !== undefined);

/** The OpenAPI schema of every `metadata` field. */
export const METADATA_SCHEMA = {
  type: 'object' as const,
  maxProperties: METADATA_MAX_KEYS,
  additionalProperties: { oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] },
  description: `At most ${METADATA_MAX_KEYS} keys and ${METADATA_MAX_BYTES} bytes serialised; values are strings, numbers or booleans.`,
  example: { dock: 'B4', gates: 12, bonded: true },
} satisfies ApiPropertyOptions;

/** JSON has no NaN or Infinity; refusing them anyway keeps the rule independent of the parser. */
export const FINITE = { allowNaN: false, allowInfinity: false } as const;

export class GeoPointDto {
  @ApiProperty({ type: Number, minimum: -90, maximum: 90, example: 51.9496, description: 'Latitude, WGS 84 degrees.' })
  @IsDefined()
  @IsNumber(FINITE)
  @Min(-90)
  @Max(90)
  lat: number;

  @ApiProperty({ type: Number, minimum: -180, maximum: 180, example: 4.1453, description: 'Longitude, WGS 84 degrees.' })
  @IsDefined()
  @IsNumber(FINITE)
  @Min(-180)
  @Max(180)
  lng: number;
}

/** `metadata` of every collection page. */
export class PageMetadataDto {
  @ApiProperty({ type: String, nullable: true, description: 'Opaque; null on the last page.' }) nextCursor: string | null;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Present when includeTotal=true.' }) total?: number;
}

/** The error envelope of every error answer, for the API reference. Which details come depends on the code. */
export class ErrorDetailsDto {
  @ApiPropertyOptional({ example: 'location.lat', description: 'InvalidParameter: the field, query parameter or header at fault.' }) field?: string;
  @ApiPropertyOptional({ enum: ParameterIssue, enumName: 'ParameterIssue', example: ParameterIssue.OutOfRange, description: 'InvalidParameter: what is wrong with it.' })
  issue?: ParameterIssue;
  @ApiPropertyOptional({ example: 'Completed', description: "InvalidStateTransition: the shipment's status." }) from?: string;
  @ApiPropertyOptional({ example: 'deliver', description: 'InvalidStateTransition: the action refused.' }) action?: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'DeviceAlreadyAssigned: the device.' }) deviceId?: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'DeviceAlreadyAssigned: the shipment it is assigned to.' }) shipmentId?: string;
  @ApiPropertyOptional({ example: 'application', description: 'RateLimitExceeded: the policy whose limit was reached.' }) policy?: string;
}

export class ErrorBodyDto {
  @ApiProperty({ format: 'uuid', description: 'Quote it when reporting a problem: the gateway logs the cause of a 5xx under it.' }) id: string;
  @ApiProperty({ enum: ErrorCode, enumName: 'ErrorCode', example: ErrorCode.InvalidParameter }) code: ErrorCode;
  @ApiProperty({ example: 'location.lat must not be greater than 90.' }) message: string;
  @ApiPropertyOptional({ type: ErrorDetailsDto, description: 'With some 4xx codes only; never on a 5xx.' }) details?: ErrorDetailsDto;
}

export class ErrorEnvelopeDto {
  @ApiProperty({ type: ErrorBodyDto }) error: ErrorBodyDto;
}
