import { ApiProperty } from '@nestjs/swagger';
import { IsDefined, IsString, Length } from 'class-validator';

export class TokenRequestDto {
  @ApiProperty({ format: 'uuid' })
  @IsDefined()
  @IsString()
  @Length(1, 100)
  tenantId: string;

  @ApiProperty({ format: 'uuid' })
  @IsDefined()
  @IsString()
  @Length(1, 100)
  applicationId: string;

  @ApiProperty({ description: 'The secret printed when the application was created or its secret rotated.' })
  @IsDefined()
  @IsString()
  @Length(1, 500)
  applicationSecret: string;
}

export class TokenResponseDto {
  @ApiProperty({ description: 'Signed JWT (ES256).' })
  accessToken: string;

  @ApiProperty({ type: 'integer', example: 86400, description: 'Seconds the token stays valid: 86400 (24 h).' })
  expiresIn: number;
}
