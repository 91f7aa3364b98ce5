import { ApiProperty } from '@nestjs/swagger';
import { PageMetadataDto } from '../http/common.dto.js';
import { Role } from '../identity/roles.js';

export class AccountDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a' }) id: string;
  @ApiProperty({ example: 'Benelux cold chain' }) name: string;
  @ApiProperty({
    enum: Role,
    enumName: 'Role',
    example: Role.Operator,
    description: "The application's role on the account; the strongest when several of its role assignments cover it (Admin, Operator, Viewer, Ingest).",
  })
  role: Role;
}

export class AccountPageDto {
  @ApiProperty({ type: [AccountDto] }) items: AccountDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}
