import { randomUUID } from 'node:crypto';
import { type JWTPayload, SignJWT } from 'jose';
import { expect } from 'vitest';
import { SigningKeysService } from '../../apps/gateway/src/auth/signing-keys.service.js';
import type { HttpResult, TestStack } from './stack.js';

export interface MintOptions {
  /** Claims merged over valid ones; a claim set to `undefined` is left out. */
  claims?: Record<string, unknown>;
  /** Protected header merged over `{alg: 'ES256', kid: <active kid>, typ: 'JWT'}`. */
  header?: Record<string, unknown>;
  /** Signing key; default the gateway's own active private key. */
  key?: Parameters<SignJWT['sign']>[0];
}

/**
 * An access token minted in the test with the gateway's real signing key (or `key`): valid for
 * `sub`/`tid` unless the options spoil it, so each test changes exactly one thing.
 */
export async function mintToken(stack: TestStack, sub: string, tid: string, options: MintOptions = {}): Promise<string> {
  const { kid, privateKey } = stack.gateway.get(SigningKeysService).signingKey();
  const config = stack.gatewayConfig;
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    iss: config.JWT_ISSUER,
    aud: config.JWT_AUDIENCE,
    sub,
    tid,
    iat: now,
    exp: now + 86400,
    jti: randomUUID(),
    ...options.claims,
  };
  for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
  const header = { alg: 'ES256', kid, typ: 'JWT', ...options.header };
  return new SignJWT(claims as JWTPayload).setProtectedHeader(header as never).sign(options.key ?? privateKey);
}

/** `base64url(header).base64url(payload).` with no signature, as an `alg: none` token is sent. */
export function unsignedToken(header: object, payload: object): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part(header)}.${part(payload)}.`;
}

/** The specification's 401: exactly `{"error":{"code":"Unauthorized","message":...}}`, no id, no details. */
export function expectUnauthorized(response: HttpResult): void {
  expect(response.status, response.text).toBe(401);
  expect(response.body).toStrictEqual({ error: { code: 'Unauthorized', message: expect.any(String) } });
  expect(response.body.error.message.length).toBeGreaterThan(0);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
}
