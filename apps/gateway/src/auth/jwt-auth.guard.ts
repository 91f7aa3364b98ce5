import { Injectable } from '@nestjs/common';
import { AuthGuard } from '@nestjs/passport';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { Principal } from './principal.js';

/** 401 `Unauthorized` unless the request carries a valid access token. */
@Injectable()
export class JwtAuthGuard extends AuthGuard('jwt') {
  override handleRequest<T = Principal>(error: unknown, principal: T | false, info: unknown): T {
    if (error || !principal) {
      const expired = info instanceof Error && info.name === 'TokenExpiredError';
      throw new DomainError(
        ErrorCode.Unauthorized,
        expired
          ? 'The access token has expired; request a new one at POST /v1/applications/token.'
          : 'A valid access token is required: send Authorization: Bearer <accessToken>.',
      );
    }
    return principal;
  }
}
