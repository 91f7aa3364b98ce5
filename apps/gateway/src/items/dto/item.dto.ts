import { ApiProperty, type ApiPropertyOptions, ApiPropertyOptional } from '@nestjs/swagger';
import type { Metadata } from '@tracking/contracts';
import { IsDefined, IsInt, IsOptional, IsString, Length, Max, MaxLength, Min } from 'class-validator';
import { IsOmittable, METADATA_SCHEMA, PageMetadataDto } from '../../http/common.dto.js';
import { IsMetadata } from '../../http/metadata.validator.js';
import { HasVisibleText } from '../../http/visible-text.validator.js';

const MAX_QUANTITY = 1_000_000;

const SKU = { minLength: 1, maxLength: 100, example: 'SKU-4711-BLUE-XL' } satisfies ApiPropertyOptions;
const DESCRIPTION = { type: String, nullable: true, maxLength: 2000, example: 'Rain jacket, blue, size XL' } satisfies ApiPropertyOptions;
const QUANTITY = { type: 'integer' as const, minimum: 1, maximum: MAX_QUANTITY, example: 24 } satisfies ApiPropertyOptions;
const UNIT = { type: String, nullable: true, minLength: 1, maxLength: 20, example: 'pcs' } satisfies ApiPropertyOptions;

export class ItemDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a2-7e8f-7a0b-9c1d-2e3f4a5b6c7d' }) id: string;
  @ApiProperty({ format: 'uuid', example: '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a' }) shipmentId: string;
  @ApiProperty({ format: 'uuid', example: '0190a4a1-2b3c-7d4e-8f5a-6b7c8d9e0f1a' }) setId: string;
  @ApiProperty(SKU) sku: string;
  @ApiProperty(DESCRIPTION) description: string | null;
  @ApiProperty(QUANTITY) quantity: number;
  @ApiProperty(UNIT) unit: string | null;
  @ApiProperty(METADATA_SCHEMA) metadata: Metadata;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) updatedAt: string;
}

export class ItemPageDto {
  @ApiProperty({ type: [ItemDto] }) items: ItemDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

export class CreateItemDto {
  @ApiProperty(SKU)
  @IsDefined()
  @IsString()
  @Length(1, 100)
  @HasVisibleText()
  sku: string;

  @ApiPropertyOptional({ ...DESCRIPTION, description: 'Left out: null.' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string | null;

  @ApiProperty(QUANTITY)
  @IsDefined()
  @IsInt()
  @Min(1)
  @Max(MAX_QUANTITY)
  quantity: number;

  @ApiPropertyOptional({ ...UNIT, description: 'Left out: null.' })
  @IsOptional()
  @IsString()
  @Length(1, 20)
  unit?: string | null;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: `${METADATA_SCHEMA.description} Left out: {}.` })
  @IsOmittable()
  @IsMetadata()
  metadata?: Metadata;
}

/** Any subset of the fields; `description` and `unit` may be set to null, the others may not. `metadata` is replaced whole. */
export class UpdateItemDto {
  @ApiPropertyOptional(SKU)
  @IsOmittable()
  @IsString()
  @Length(1, 100)
  @HasVisibleText()
  sku?: string;

  @ApiPropertyOptional(DESCRIPTION)
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string | null;

  @ApiPropertyOptional(QUANTITY)
  @IsOmittable()
  @IsInt()
  @Min(1)
  @Max(MAX_QUANTITY)
  quantity?: number;

  @ApiPropertyOptional(UNIT)
  @IsOptional()
  @IsString()
  @Length(1, 20)
  unit?: string | null;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: `Replaces the whole metadata object. ${METADATA_SCHEMA.description}` })
  @IsOmittable()
  @IsMetadata()
  metadata?: Metadata;
}
