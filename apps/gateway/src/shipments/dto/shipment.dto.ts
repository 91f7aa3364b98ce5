import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ShipmentStatus, TransportMode } from '@tracking/contracts';
import { IsDefined, IsString, Length } from 'class-validator';
import { IsOmittable, PageMetadataDto } from '../../http/common.dto.js';

export class ShipmentDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ minLength: 1, maxLength: 200 }) name: string;
  @ApiProperty({ type: String, nullable: true }) reference: string | null;
  @ApiProperty({ enum: ShipmentStatus, example: ShipmentStatus.InTransit }) status: ShipmentStatus;
  @ApiProperty({ enum: TransportMode, nullable: true }) mode: TransportMode | null;
  @ApiProperty({ type: String, nullable: true }) carrier: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) originId: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) destinationId: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) plannedDepartureAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) plannedArrivalAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) departedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) deliveredAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) completedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) cancelledAt: string | null;
  @ApiProperty({ type: [String] }) tags: string[];
  @ApiProperty({ type: 'object', additionalProperties: true }) metadata: Record<string, string | number | boolean>;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class ShipmentPageDto {
  @ApiProperty({ type: [ShipmentDto] }) items: ShipmentDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

export class CreateShipmentDto {
  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Rotterdam to Lyon, week 48' })
  @IsDefined()
  @IsString()
  @Length(1, 200)
  name: string;
}

export class UpdateShipmentDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 200 })
  @IsOmittable()
  @IsString()
  @Length(1, 200)
  name?: string;
}
