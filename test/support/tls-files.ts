import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TlsFiles {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** Deletes the directory holding them. */
  remove(): void;
}

/**
 * A throwaway certificate authority with a server certificate for 127.0.0.1 and a client certificate,
 * made with the `openssl` command line.
 */
export function makeTlsFiles(): TlsFiles {
  const dir = mkdtempSync(join(tmpdir(), 'tracking-tls-'));
  const path = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=tracking test CA', '-keyout', path('ca-key.pem'), '-out', path('ca.pem'));
  writeFileSync(path('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  writeFileSync(path('client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const [name, subject] of [
    ['server', '/CN=127.0.0.1'],
    ['client', '/CN=tracking client'],
  ] as const) {
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', subject, '-keyout', path(`${name}-key.pem`), '-out', path(`${name}.csr`));
    openssl('x509', '-req', '-in', path(`${name}.csr`), '-CA', path('ca.pem'), '-CAkey', path('ca-key.pem'), '-CAcreateserial', '-days', '1',
      '-extfile', path(`${name}.ext`), '-out', path(`${name}.pem`));
  }
  return {
    ca: path('ca.pem'),
    serverCert: path('server.pem'),
    serverKey: path('server-key.pem'),
    clientCert: path('client.pem'),
    clientKey: path('client-key.pem'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
