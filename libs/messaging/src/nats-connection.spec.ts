import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, readConfig } from '@tracking/core';
import { afterAll, describe, expect, it } from 'vitest';
import { checkNatsConfig, natsConfigSchema, natsConnectionOptions } from './nats-connection.js';

const dir = mkdtempSync(join(tmpdir(), 'nats-config-'));
const file = (name: string) => {
  const path = join(dir, name);
  writeFileSync(path, 'x');
  return path;
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const read = (source: Record<string, string>) => checkNatsConfig(readConfig(natsConfigSchema, source));

function errorOf(source: Record<string, string>): string {
  try {
    read(source);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('the NATS configuration', () => {
  it('connects without credentials by default, reconnecting forever', () => {
    const options = natsConnectionOptions(read({ NATS_URL: 'nats://a:4222,nats://b:4222' }), 'gateway');
    expect(options).toMatchObject({ servers: ['nats://a:4222', 'nats://b:4222'], name: 'gateway', maxReconnectAttempts: -1, reconnectTimeWait: 2000, inboxPrefix: '_INBOX' });
    expect(options).not.toHaveProperty('user');
    expect(options).not.toHaveProperty('tls');
    expect(options).not.toHaveProperty('authenticator');
  });

  it('passes user and password, a token, or a file authenticator, and TLS files', () => {
    expect(natsConnectionOptions(read({ NATS_USER: 'oms', NATS_PASSWORD: 'secret' }), 'oms')).toMatchObject({ user: 'oms', pass: 'secret' });
    expect(natsConnectionOptions(read({ NATS_TOKEN: 't0ken' }), 'oms')).toMatchObject({ token: 't0ken' });
    expect(natsConnectionOptions(read({ NATS_CREDS_FILE: file('app.creds') }), 'oms').authenticator).toBeTypeOf('function');
    expect(natsConnectionOptions(read({ NATS_NKEY_SEED_FILE: file('app.nk') }), 'oms').authenticator).toBeTypeOf('function');
    const [ca, cert, key] = [file('ca.pem'), file('cert.pem'), file('key.pem')];
    expect(natsConnectionOptions(read({ NATS_TLS_CA_FILE: ca }), 'dms').tls).toEqual({ caFile: ca });
    expect(natsConnectionOptions(read({ NATS_TLS_CA_FILE: ca, NATS_TLS_CERT_FILE: cert, NATS_TLS_KEY_FILE: key }), 'dms').tls).toEqual({
      caFile: ca,
      certFile: cert,
      keyFile: key,
    });
    expect(natsConnectionOptions(read({ NATS_INBOX_PREFIX: '_INBOX.worker', NATS_RECONNECT_TIME_WAIT_MS: '250' }), 'worker')).toMatchObject({
      inboxPrefix: '_INBOX.worker',
      reconnectTimeWait: 250,
    });
  });

  it('refuses incomplete or conflicting credentials, unreadable files and bad inbox prefixes', () => {
    expect(errorOf({ NATS_USER: 'oms' })).toMatch(/NATS_PASSWORD must be set together/);
    expect(errorOf({ NATS_PASSWORD: 'secret' })).toMatch(/NATS_USER must be set together/);
    expect(errorOf({ NATS_USER: 'oms', NATS_PASSWORD: 'secret', NATS_TOKEN: 't' })).toMatch(/NATS_TOKEN cannot be combined with NATS_USER/);
    expect(errorOf({ NATS_TOKEN: 't', NATS_CREDS_FILE: file('a.creds') })).toMatch(/NATS_CREDS_FILE cannot be combined with NATS_TOKEN/);
    expect(errorOf({ NATS_CREDS_FILE: join(dir, 'missing.creds') })).toMatch(/NATS_CREDS_FILE names a file that cannot be read/);
    expect(errorOf({ NATS_TLS_CERT_FILE: file('c.pem') })).toMatch(/NATS_TLS_KEY_FILE must be set together/);
    expect(errorOf({ NATS_TLS_KEY_FILE: file('k.pem') })).toMatch(/NATS_TLS_CERT_FILE must be set together/);
    expect(errorOf({ NATS_INBOX_PREFIX: '_INBOX.>' })).toMatch(/NATS_INBOX_PREFIX must be tokens/);
    expect(errorOf({ NATS_RECONNECT_TIME_WAIT_MS: '0' })).toMatch(/NATS_RECONNECT_TIME_WAIT_MS must be >= 10/);
  });
});
