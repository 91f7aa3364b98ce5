import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { SetKind } from '@tracking/contracts';
import { IsDefined, IsEnum, IsString, Length } from 'class-validator';
import { IsOmittable, PageMetadataDto } from '../../http/common.dto.js';
import { HasVisibleText } from '../../http/visible-text.validator.js';

export class SetDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a1-2b3c-7d4e-8f5a-6b7c8d9e0f1a' }) id: string;
  @ApiProperty({ format: 'uuid', example: '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a' }) shipmentId: string;
  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Pallet 3 of 12' }) name: string;
  @ApiProperty({ enum: SetKind, enumName: 'SetKind', example: SetKind.Pallet }) kind: SetKind;
  @ApiProperty({
    type: 'array',
    items: { type: 'string', format: 'uuid' },
    example: [],
    description: 'Devices assigned to the set; set by device assignment, never by this body.',
  })
  deviceIds: string[];
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) updatedAt: string;
}

export class SetPageDto {
  @ApiProperty({ type: [SetDto] }) items: SetDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

export class CreateSetDto {
  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Pallet 3 of 12' })
  @IsDefined()
  @IsString()
  @Length(1, 200)
  @HasVisibleText()
  name: string;

  @ApiProperty({ enum: SetKind, enumName: 'SetKind', example: SetKind.Pallet })
  @IsDefined()
  @IsEnum(SetKind)
  kind: SetKind;
}

/** Any subset of the fields; none may be null. */
export class UpdateSetDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 200, example: 'Pallet 3 of 12, rewrapped' })
  @IsOmittable()
  @IsString()
  @Length(1, 200)
  @HasVisibleText()
  name?: string;

  @ApiPropertyOptional({ enum: SetKind, enumName: 'SetKind', example: SetKind.Container })
  @IsOmittable()
  @IsEnum(SetKind)
  kind?: SetKind;
}
