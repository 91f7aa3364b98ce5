import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { decodeJwt } from 'jose';
import passport from 'passport';
import { type AccessTokenClaims, bearerToken, JwtStrategy } from './jwt.strategy.js';
import type { Principal } from './principal.js';

/**
 * 401 `Unauthorized` unless the request carries a valid access token.
 *
 * Not `AuthGuard('jwt')`: that looks the strategy up by name in passport's registry, which is global
 * to the process, so a second gateway in the same process (integration tests, replicas) would verify
 * with the last one's keys and identity database. This guard uses its own application's strategy.
 */
@Injectable()
export class JwtAuthGuard implements CanActivate {
  constructor(private readonly strategy: JwtStrategy) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<{ user?: Principal; headers: Record<string, string | string[] | undefined> }>();
    const token = bearerToken(request);
    const claims = token === null ? undefined : this.strategy.recentlyVerified(token);
    if (claims !== undefined) {
      // Verified a moment ago: only what can change since (the application, its roles) is checked again.
      request.user = principalOrThrow(null, await this.strategy.validate(claims), undefined);
      return true;
    }
    request.user = await new Promise<Principal>((resolve, reject) => {
      // Passport attaches per-request callbacks to the strategy object it is given: one object per request.
      const strategy = Object.create(this.strategy) as JwtStrategy;
      const authenticate = passport.authenticate(
        strategy,
        { session: false },
        (error: unknown, principal: Principal | false, info: unknown) => {
          try {
            resolve(principalOrThrow(error, principal, info));
          } catch (failure) {
            reject(failure);
          }
        },
      ) as (request: unknown, response: unknown, next: (error?: unknown) => void) => void;
      authenticate(request, http.getResponse(), (error) => reject(error ?? new Error('passport ended without a result')));
    });
    if (token !== null) this.strategy.rememberVerified(token, decodeJwt(token) as AccessTokenClaims);
    return true;
  }
}

function principalOrThrow(error: unknown, principal: Principal | false, info: unknown): Principal {
  // Passport reports a rejected token through `info`; `error` is a failure of `validate` itself
  // (the identity database is down), which is ours to answer with a 5xx, not the client's 401.
  if (error) throw error;
  if (!principal) {
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
