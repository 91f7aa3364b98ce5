import { Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdentityModule } from '../identity/identity.module.js';
import { AuthController } from './auth.controller.js';
import { Authenticator } from './authenticator.js';
import { JwtStrategy } from './jwt.strategy.js';
import { SigningKeyEntity } from './signing-key.entity.js';
import { SigningKeyRepository } from './signing-key.repository.js';
import { SecretVerifier } from './secret-verifier.js';
import { SigningKeysService } from './signing-keys.service.js';
import { TokenService } from './token.service.js';

@Module({
  imports: [PassportModule, IdentityModule, TypeOrmModule.forFeature([SigningKeyEntity])],
  controllers: [AuthController],
  providers: [SigningKeyRepository, SigningKeysService, SecretVerifier, TokenService, JwtStrategy, Authenticator],
  exports: [SigningKeysService, JwtStrategy, Authenticator, IdentityModule],
})
export class AuthModule {}
