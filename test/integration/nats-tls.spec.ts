import { connect } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { createDevice } from '../factories/device.factory.js';
import { createTenant } from '../factories/identity.factory.js';
import { createShipment } from '../factories/shipment.factory.js';
import { OwnNatsServer } from '../support/nats-server.js';
import { TestStack } from '../support/stack.js';
import { makeTlsFiles, type TlsFiles } from '../support/tls-files.js';

let tls: TlsFiles | undefined;
let nats: OwnNatsServer | undefined;
let stack: TestStack | undefined;
afterEach(async () => {
  await stack?.stop();
  await nats?.stop();
  tls?.remove();
  [stack, nats, tls] = [undefined, undefined, undefined];
});

describe('NATS over TLS', { timeout: 60000 }, () => {
  it('connects every process with the configured CA, client certificate and key; a client without them is refused', async () => {
    tls = makeTlsFiles();
    // The server requires TLS and a client certificate signed by the CA.
    nats = await OwnNatsServer.start({ args: ['--tls', '--tlscert', tls.serverCert, '--tlskey', tls.serverKey, '--tlscacert', tls.ca, '--tlsverify'] });
    stack = await TestStack.start({
      env: {
        NATS_URL: `tls://127.0.0.1:${nats.port}`,
        NATS_SUBJECT_PREFIX: '',
        NATS_TLS_CA_FILE: tls.ca,
        NATS_TLS_CERT_FILE: tls.clientCert,
        NATS_TLS_KEY_FILE: tls.clientKey,
      },
    });
    const tenant = await createTenant(stack);
    await createShipment(stack, tenant);
    await createDevice(stack, tenant);
    const ready = await stack.request('GET', '/health/ready');
    expect([ready.status, ready.body.checks]).toEqual([200, expect.objectContaining({ nats: 'ok', oms: 'ok', dms: 'ok' })]);

    await expect(connect({ servers: nats.url, maxReconnectAttempts: 0, timeout: 2000 })).rejects.toThrow();
    await expect(connect({ servers: nats.url, tls: { caFile: tls.ca }, maxReconnectAttempts: 0, timeout: 2000 })).rejects.toThrow();
  });
});
