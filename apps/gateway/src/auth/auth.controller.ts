import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { TokenRequestDto, TokenResponseDto } from './dto/token-request.dto.js';
import { SigningKeysService } from './signing-keys.service.js';
import { TokenService } from './token.service.js';

@ApiTags('Authentication')
@Controller('v1')
export class AuthController {
  constructor(
    private readonly tokens: TokenService,
    private readonly keys: SigningKeysService,
  ) {}

  @Post('applications/token')
  @HttpCode(200)
  @ApiOperation({ summary: 'Exchange application credentials for an access token valid 86400 s' })
  @ApiOkResponse({ type: TokenResponseDto })
  @ApiUnauthorizedResponse({ description: 'The credentials are not valid.' })
  issueToken(@Body() body: TokenRequestDto): Promise<TokenResponseDto> {
    return this.tokens.issue(body.tenantId, body.applicationId, body.applicationSecret);
  }

  @Get('.well-known/jwks.json')
  @ApiOperation({ summary: 'The public keys that verify access tokens' })
  jwks(): Promise<{ keys: object[] }> {
    return this.keys.jwks();
  }
}
