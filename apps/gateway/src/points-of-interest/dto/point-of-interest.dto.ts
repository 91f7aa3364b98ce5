import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { DEFAULT_DWELL_SECONDS, DEFAULT_RADIUS_METERS, type Metadata, PointOfInterestKind } from '@tracking/contracts';
import { Type } from 'class-transformer';
import { IsDefined, IsEnum, IsInt, IsObject, IsOptional, IsString, Length, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { IsMetadata } from '../../http/metadata.validator.js';
import { HasVisibleText } from '../../http/visible-text.validator.js';
import { GeoPointDto, IsOmittable, METADATA_SCHEMA, PageMetadataDto } from '../../http/common.dto.js';

const DWELL_DESCRIPTION =
  'How long a shipment must stay inside before its arrival counts, and outside before its departure counts (event time).';

export class PointOfInterestDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a' }) id: string;
  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Port of Rotterdam, Maasvlakte II' }) name: string;
  @ApiProperty({ enum: PointOfInterestKind, enumName: 'PointOfInterestKind', example: PointOfInterestKind.Port })
  kind: PointOfInterestKind;
  @ApiProperty({ type: GeoPointDto }) location: GeoPointDto;
  @ApiProperty({ type: 'integer', minimum: 10, maximum: 100000, example: 1500 }) radiusMeters: number;
  @ApiProperty({ type: 'integer', minimum: 0, maximum: 86400, example: 120, description: DWELL_DESCRIPTION }) dwellSeconds: number;
  @ApiProperty({ type: String, nullable: true, maxLength: 2000, example: 'Europaweg 875, 3199 LD Maasvlakte Rotterdam, NL' })
  address: string | null;
  @ApiProperty(METADATA_SCHEMA) metadata: Metadata;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) updatedAt: string;
}

export class PointOfInterestPageDto {
  @ApiProperty({ type: [PointOfInterestDto] }) items: PointOfInterestDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

export class CreatePointOfInterestDto {
  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Port of Rotterdam, Maasvlakte II' })
  @IsDefined()
  @IsString()
  @Length(1, 200)
  @HasVisibleText()
  name: string;

  @ApiProperty({ enum: PointOfInterestKind, enumName: 'PointOfInterestKind', example: PointOfInterestKind.Port })
  @IsDefined()
  @IsEnum(PointOfInterestKind)
  kind: PointOfInterestKind;

  @ApiProperty({ type: GeoPointDto })
  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => GeoPointDto)
  location: GeoPointDto;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 10,
    maximum: 100000,
    example: 1500,
    description: `Left out: ${DEFAULT_RADIUS_METERS}.`,
  })
  @IsOmittable()
  @IsInt()
  @Min(10)
  @Max(100000)
  radiusMeters?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 86400, example: 300, description: `${DWELL_DESCRIPTION} Left out: ${DEFAULT_DWELL_SECONDS}.` })
  @IsOmittable()
  @IsInt()
  @Min(0)
  @Max(86400)
  dwellSeconds?: number;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 2000, example: 'Europaweg 875, 3199 LD Maasvlakte Rotterdam, NL' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  address?: string | null;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: `${METADATA_SCHEMA.description} Left out: {}.` })
  @IsOmittable()
  @IsMetadata()
  metadata?: Metadata;
}

/** Any subset of the fields; `address` may be set to null, the others may not. `metadata` is replaced whole. */
export class UpdatePointOfInterestDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 200, example: 'Port of Rotterdam, ECT Delta' })
  @IsOmittable()
  @IsString()
  @Length(1, 200)
  @HasVisibleText()
  name?: string;

  @ApiPropertyOptional({ enum: PointOfInterestKind, enumName: 'PointOfInterestKind', example: PointOfInterestKind.Warehouse })
  @IsOmittable()
  @IsEnum(PointOfInterestKind)
  kind?: PointOfInterestKind;

  @ApiPropertyOptional({ type: GeoPointDto, description: 'Both coordinates together.' })
  @IsOmittable()
  @IsObject()
  @ValidateNested()
  @Type(() => GeoPointDto)
  location?: GeoPointDto;

  @ApiPropertyOptional({ type: 'integer', minimum: 10, maximum: 100000, example: 800 })
  @IsOmittable()
  @IsInt()
  @Min(10)
  @Max(100000)
  radiusMeters?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 86400, example: 600, description: DWELL_DESCRIPTION })
  @IsOmittable()
  @IsInt()
  @Min(0)
  @Max(86400)
  dwellSeconds?: number;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 2000, example: null })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  address?: string | null;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: `Replaces the whole metadata object. ${METADATA_SCHEMA.description}` })
  @IsOmittable()
  @IsMetadata()
  metadata?: Metadata;
}
