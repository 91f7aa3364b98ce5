import { Inject, Injectable } from '@nestjs/common';
import { errors, jwtVerify } from 'jose';
import { bearerTokenOf, withinTokenLifetime } from '../../auth/jwt.strategy.js';
import { SIGNING_ALGORITHM, SigningKeysService } from '../../auth/signing-keys.service.js';
import { VerifiedTokens } from '../../auth/verified-tokens.js';
import type { GatewayConfig } from '../../config.js';
import { GATEWAY_CONFIG } from '../../tokens.js';


export interface TokenSubject {
  applicationId: string;
  tenantId: string;
}

/**
 * Who a request's bearer token names, for the per-application limit. Rate limiting runs before
 * authentication (so that a flood costs as little as possible), and counting by an unverified `sub`
 * would let anyone spend another application's quota: so the signature, algorithm, `iss`, `aud`
 * and `exp` are checked here as the JWT strategy checks them, and so is the lifetime (exp - iat). Verified tokens are remembered until
 * they expire, as clients send the same token for hours. Whether the application is still active is
 * left to authentication.
 */
@Injectable()
export class TokenSubjects {
  private readonly verified = new VerifiedTokens<TokenSubject>();

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly keys: SigningKeysService,
  ) {}

  /** The token's application and tenant, or undefined when there is no valid token. */
  async subjectOf(authorization: string | string[] | undefined): Promise<TokenSubject | undefined> {
    const token = bearerTokenOf(authorization);
    if (token === null) return undefined;
    return this.verified.get(token) ?? this.verify(token);
  }

  private async verify(token: string): Promise<TokenSubject | undefined> {
    try {
      const { payload } = await jwtVerify(
        token,
        async (header) => {
          const key = typeof header.kid === 'string' && header.kid.length <= 128 ? await this.keys.verificationKey(header.kid) : undefined;
          if (!key) throw new errors.JWKSNoMatchingKey();
          return key;
        },
        {
          algorithms: [SIGNING_ALGORITHM],
          issuer: this.config.JWT_ISSUER,
          audience: this.config.JWT_AUDIENCE,
          clockTolerance: 60,
          requiredClaims: ['exp', 'sub'],
        },
      );
      if (typeof payload.sub !== 'string' || typeof payload.tid !== 'string' || typeof payload.exp !== 'number') return undefined;
      if (!withinTokenLifetime(payload)) return undefined;
      const subject = { applicationId: payload.sub, tenantId: payload.tid };
      this.verified.set(token, subject, (payload.exp + 60) * 1000);
      return subject;
    } catch {
      return undefined;
    }
  }
}
