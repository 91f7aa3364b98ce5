import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { decodeProtectedHeader } from 'jose';
import { entryBound } from '@tracking/core';
import { LRUCache } from 'lru-cache';
import { Strategy } from 'passport-jwt';
import { type GatewayConfig, TOKEN_TTL_SECONDS } from '../config.js';
import { AccessService } from '../identity/access.service.js';
import { GATEWAY_CONFIG } from '../tokens.js';
import type { Principal } from './principal.js';
import { SIGNING_ALGORITHM, SigningKeysService } from './signing-keys.service.js';

/** The clock skew allowed between the gateway replicas that issue and verify tokens (docs/api.md, "Authentication and roles"). */
const CLOCK_SKEW_SECONDS = 60;

/** The scheme's name in any case: auth schemes are case-insensitive (RFC 9110, section 11.1). */
const BEARER = /^bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/i;

/**
 * The token of an `Authorization` header of `Bearer <token>` (spec, Authentication 3), the scheme in any
 * case, one space; else null. The guard and the rate limiter both read the header through this.
 */
export function bearerTokenOf(header: string | string[] | undefined): string | null {
  return typeof header === 'string' ? (BEARER.exec(header)?.[1] ?? null) : null;
}

/** The request's bearer token; anything but `Bearer <token>` (scheme in any case) counts as no token. */
export function bearerToken(request: { headers: Record<string, string | string[] | undefined> }): string | null {
  return bearerTokenOf(request.headers.authorization);
}

/**
 * Whether the token lives no longer than the tokens the gateway issues (exp - iat at most 86400 s): a
 * longer-lived token was not issued by the token endpoint, even if it carries a valid signature (a leaked
 * or misused signing key must not mint tokens that outlive a rotation).
 */
export function withinTokenLifetime(claims: { exp?: unknown; iat?: unknown }): boolean {
  return typeof claims.exp === 'number' && typeof claims.iat === 'number' && claims.exp - claims.iat <= TOKEN_TTL_SECONDS;
}

/** How long a verified token is taken on trust: no longer than a disabled application's tokens may work. */
const VERIFIED_FOR_MS = 60000;
/** How many verified tokens are remembered; the least recently used goes first. */
const VERIFIED_CAPACITY = 10000;

export interface AccessTokenClaims {
  sub?: unknown;
  tid?: unknown;
  exp?: unknown;
  iat?: unknown;
}

/**
 * Verifies access tokens: ES256 only, a known `kid`, `iss`, `aud`, `exp`, `iat` and `nbf` with 60 s of
 * clock skew; then the application must still exist, be active and belong to the token's tenant.
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  private readonly verified = new LRUCache<string, AccessTokenClaims>({ ...entryBound(VERIFIED_CAPACITY), ttl: VERIFIED_FOR_MS });

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    keys: SigningKeysService,
    private readonly access: AccessService,
  ) {
    super({
      jwtFromRequest: bearerToken,
      algorithms: [SIGNING_ALGORITHM],
      issuer: config.JWT_ISSUER,
      audience: config.JWT_AUDIENCE,
      ignoreExpiration: false,
      jsonWebTokenOptions: { clockTolerance: CLOCK_SKEW_SECONDS },
      // jsonwebtoken accepts a KeyObject, although the typings only name strings and buffers.
      secretOrKeyProvider: (_request: unknown, rawToken: string, done: (error: Error | null, key?: string) => void) => {
        let kid: unknown;
        try {
          kid = decodeProtectedHeader(rawToken).kid;
        } catch {
          done(new Error('malformed token header'));
          return;
        }
        if (typeof kid !== 'string' || kid.length > 128) {
          done(new Error('token has no usable kid'));
          return;
        }
        keys.verificationKey(kid).then(
          (key) => (key ? done(null, key as unknown as string) : done(new Error('unknown kid'))),
          (error: Error) => done(error),
        );
      },
    });
  }

  /**
   * The claims of a token this strategy verified (signature, algorithm, kid, iss, aud, exp, nbf) within the
   * last 60 s and that has not expired since; `validate` must still pass. Clients send one token on every
   * request, and its ES256 signature is the dearest check. Speed machinery (docs/architecture.md, "Speed
   * machinery"): the simple version runs passport's verification on every request.
   */
  recentlyVerified(token: string): AccessTokenClaims | undefined {
    return this.verified.get(token);
  }

  /** Remembers a token passport has just accepted, with its claims. */
  rememberVerified(token: string, claims: AccessTokenClaims): void {
    if (typeof claims.exp !== 'number') return;
    const ttl = Math.min(VERIFIED_FOR_MS, (claims.exp + CLOCK_SKEW_SECONDS) * 1000 - Date.now());
    if (ttl > 0) this.verified.set(token, claims, { ttl });
  }

  /** Returning false makes passport answer 401. */
  async validate(claims: AccessTokenClaims): Promise<Principal | false> {
    // jsonwebtoken checks `exp` only when present; a token without one would never expire. It does
    // not check `iat` at all: a token issued in the future (beyond the skew) is not one of ours.
    if (typeof claims.sub !== 'string' || typeof claims.tid !== 'string' || typeof claims.exp !== 'number') return false;
    if (typeof claims.iat !== 'number' || claims.iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) return false;
    if (!withinTokenLifetime(claims)) return false;
    const application = await this.access.application(claims.sub);
    if (!application?.active || application.tenantId !== claims.tid) return false;
    return { applicationId: claims.sub, tenantId: claims.tid, roleAssignments: application.roleAssignments };
  }
}
