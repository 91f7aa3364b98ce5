import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { SignJWT } from 'jose';
import { validate as isUuid } from 'uuid';
import { type GatewayConfig, TOKEN_TTL_SECONDS } from '../config.js';
import { ApplicationStatus } from '../identity/application.entity.js';
import { ApplicationRepository } from '../identity/application.repository.js';
import { GATEWAY_CONFIG } from '../tokens.js';
import { SecretVerifier } from './secret-verifier.js';
import { SIGNING_ALGORITHM, SigningKeysService } from './signing-keys.service.js';

export interface TokenResponse {
  accessToken: string;
  expiresIn: number;
}

@Injectable()
export class TokenService {
  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly applications: ApplicationRepository,
    private readonly keys: SigningKeysService,
    private readonly secrets: SecretVerifier,
  ) {}

  /**
   * Exchanges credentials for an access token. Wrong tenant, unknown or disabled application and
   * wrong secret all give the same 401, after the same scrypt work, so none can be told apart (only a
   * secret that matched before is answered from memory: see SecretVerifier).
   */
  async issue(tenantId: string, applicationId: string, applicationSecret: string): Promise<TokenResponse> {
    const application = isUuid(applicationId) ? await this.applications.findById(applicationId) : null;
    const secretMatches = await this.secrets.matches(application, applicationSecret);
    if (!application || !secretMatches || application.tenantId !== tenantId || application.status !== ApplicationStatus.Active) {
      throw new DomainError(ErrorCode.Unauthorized, 'The credentials are not valid.');
    }
    const { kid, privateKey } = await this.keys.currentSigningKey();
    // The stored ids, not the request's spelling: the account checks compare them as text.
    const accessToken = await new SignJWT({ tid: application.tenantId })
      .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid, typ: 'JWT' })
      .setIssuer(this.config.JWT_ISSUER)
      .setAudience(this.config.JWT_AUDIENCE)
      .setSubject(application.id)
      .setIssuedAt()
      .setExpirationTime(`${TOKEN_TTL_SECONDS}s`)
      .setJti(randomUUID())
      .sign(privateKey);
    return { accessToken, expiresIn: TOKEN_TTL_SECONDS };
  }
}
