import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { CredentialProtocol, MAX_CREDENTIALS_PER_DEVICE } from '@tracking/contracts';
import { IsDefined, IsEnum, IsOptional, IsString } from 'class-validator';
import { PageMetadataDto } from '../../http/common.dto.js';

const IDENTIFIER_DESCRIPTION =
  'Mqtt and Http: 1 to 64 of A-Z a-z 0-9 . _ - (the MQTT username and topic segment, the OsmAnd `id`), by default the ' +
  "device's id. Teltonika: required, the device's 15-digit IMEI. Unique system-wide per protocol: several Mqtt or Http " +
  'credentials of one device may share it (to rotate a secret), another device may not (DuplicateIdentifier); one credential per IMEI.';

export class CredentialDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a0-6b1c-7d2e-8f3a-4b5c6d7e8f90' }) id: string;
  @ApiProperty({ format: 'uuid', example: '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a' }) deviceId: string;
  @ApiProperty({ enum: CredentialProtocol, enumName: 'CredentialProtocol', example: CredentialProtocol.Http }) protocol: CredentialProtocol;
  @ApiProperty({ minLength: 1, maxLength: 64, example: 'truck-17', description: IDENTIFIER_DESCRIPTION }) identifier: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-24T08:30:00.000Z' }) createdAt: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: null,
    description: 'When a tracker last used it (authenticated or sent readings), to the minute.',
  })
  lastUsedAt: string | null;
}

export class CredentialWithSecretDto extends CredentialDto {
  @ApiPropertyOptional({
    example: 'dvs_3q2-7wEBAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhs',
    description:
      'Mqtt and Http only: `dvs_` + base64url of 32 random bytes. Shown only in this answer (`Cache-Control: no-store`) and ' +
      'stored only as a digest: keep it. Teltonika credentials have none (the IMEI alone identifies the device).',
  })
  secret?: string;
}

export class CredentialPageDto {
  @ApiProperty({ type: [CredentialDto] }) credentials: CredentialDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

export class CreateCredentialDto {
  @ApiProperty({ enum: CredentialProtocol, enumName: 'CredentialProtocol', example: CredentialProtocol.Http })
  @IsDefined()
  @IsEnum(CredentialProtocol)
  protocol: CredentialProtocol;

  @ApiPropertyOptional({ minLength: 1, maxLength: 64, example: 'truck-17', description: IDENTIFIER_DESCRIPTION })
  @IsOptional()
  @IsString()
  identifier?: string;
}

export const CREDENTIAL_LIMIT = `CredentialLimitReached: the device already has ${MAX_CREDENTIALS_PER_DEVICE} credentials.`;
