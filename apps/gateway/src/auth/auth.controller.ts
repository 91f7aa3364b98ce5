import { Body, Get, HttpCode, Post } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import {
  ApiBadRequestResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { TOKEN_BODY_LIMIT_BYTES } from '../config.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { ApiController, IgnoresQuery } from '../http/api-controller.js';
import { TokenRequestDto, TokenResponseDto } from './dto/token-request.dto.js';
import { SigningKeysService } from './signing-keys.service.js';
import { TokenService } from './token.service.js';

@ApiTags('Authentication')
@ApiController('v1')
export class AuthController {
  constructor(
    private readonly tokens: TokenService,
    private readonly keys: SigningKeysService,
  ) {}

  @Post('applications/token')
  @HttpCode(200)
  // Read without a token: a small limit, as a client credentials request is a few hundred bytes.
  @RouteConfig({ bodyLimit: TOKEN_BODY_LIMIT_BYTES })
  @ApiOperation({ summary: 'Exchange application credentials for an access token valid 86400 s' })
  @ApiOkResponse({ type: TokenResponseDto, description: 'The access token; send it as `Authorization: Bearer <accessToken>`.' })
  @ApiUnauthorizedResponse({ description: 'The credentials are not valid.' })
  @ApiBadRequestResponse({
    type: ErrorEnvelopeDto,
    description: 'InvalidParameter: a field is missing, not a string, or unknown (also a query parameter); MalformedRequest: not a JSON object.',
  })
  @ApiServiceUnavailableResponse({
    type: ErrorEnvelopeDto,
    description:
      'ServiceUnavailable: the gateway cannot reach its database, or too many credential checks are in progress on this gateway; retry after Retry-After seconds.',
  })
  issueToken(@Body() body: TokenRequestDto): Promise<TokenResponseDto> {
    return this.tokens.issue(body.tenantId, body.applicationId, body.applicationSecret);
  }

  @Get('.well-known/jwks.json')
  @IgnoresQuery()
  @ApiOperation({ summary: 'The public keys that verify access tokens', description: 'Query parameters are ignored, for caches and libraries that add their own.' })
  @ApiOkResponse({
    description: 'A JSON Web Key Set (RFC 7517): the ES256 public keys, chosen by the `kid` of a token.',
    schema: {
      type: 'object',
      required: ['keys'],
      properties: {
        keys: {
          type: 'array',
          items: {
            type: 'object',
            required: ['kty', 'kid'],
            properties: {
              kty: { type: 'string', example: 'EC' },
              crv: { type: 'string', example: 'P-256' },
              x: { type: 'string' },
              y: { type: 'string' },
              kid: { type: 'string' },
              alg: { type: 'string', example: 'ES256' },
              use: { type: 'string', example: 'sig' },
            },
          },
        },
      },
    },
  })
  jwks(): Promise<{ keys: object[] }> {
    return this.keys.jwks();
  }
}
