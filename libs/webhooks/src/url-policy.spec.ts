import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { checkWebhookUrl, FORBIDDEN_ADDRESS, type Resolver, safeLookup } from './url-policy.js';

const strict = { allowInsecure: false, allowPrivateNetworks: false };
const open = { allowInsecure: true, allowPrivateNetworks: true };

/** A resolver answering from a table; names not in it do not exist. */
function resolverOf(table: Record<string, string[]>): Resolver {
  return async (hostname) => {
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

async function refusal(promise: Promise<unknown>): Promise<{ code: ErrorCode; details: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DomainError) return { code: error.code, details: error.details };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('checkWebhookUrl', () => {
  const resolver = resolverOf({
    'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    'internal.example.com': ['10.1.2.3'],
    // One public and one private address: judged by the worst.
    'mixed.example.com': ['93.184.215.14', '192.168.0.10'],
    'v6-loopback.example.com': ['::1'],
    'mapped.example.com': ['::ffff:169.254.169.254'],
    'empty.example.com': [],
  });

  it('accepts https URLs whose every address is public, and returns them parsed', async () => {
    const url = await checkWebhookUrl('https://hooks.example.com/tracking?x=1', strict, resolver);
    expect(url.href).toBe('https://hooks.example.com/tracking?x=1');
    expect((await checkWebhookUrl('https://93.184.215.14:8443/h', strict, resolver)).port).toBe('8443');
    expect((await checkWebhookUrl('https://[2606:4700:4700::1111]/h', strict, resolver)).hostname).toBe('[2606:4700:4700::1111]');
  });

  it.each([
    ['not a url', 'InvalidFormat'],
    ['/relative/path', 'InvalidFormat'],
    ['http://hooks.example.com/', 'InvalidFormat'],
    ['ftp://hooks.example.com/', 'InvalidFormat'],
    ['javascript:alert(1)', 'InvalidFormat'],
    ['https://user:pass@hooks.example.com/', 'InvalidFormat'],
    ['https://user@hooks.example.com/', 'InvalidFormat'],
    ['https://127.0.0.1/', 'ForbiddenAddress'],
    ['https://127.1/', 'ForbiddenAddress'],
    ['https://2130706433/', 'ForbiddenAddress'],
    ['https://0x7f000001/', 'ForbiddenAddress'],
    ['https://10.0.0.1/', 'ForbiddenAddress'],
    ['https://169.254.169.254/latest/meta-data/', 'ForbiddenAddress'],
    ['https://[::1]/', 'ForbiddenAddress'],
    ['https://[::ffff:127.0.0.1]/', 'ForbiddenAddress'],
    ['https://[::ffff:a9fe:a9fe]/', 'ForbiddenAddress'],
    ['https://[fd00:ec2::254]/', 'ForbiddenAddress'],
    ['https://[fe80::1]/', 'ForbiddenAddress'],
    ['https://0.0.0.0/', 'ForbiddenAddress'],
    ['https://internal.example.com/', 'ForbiddenAddress'],
    ['https://mixed.example.com/', 'ForbiddenAddress'],
    ['https://v6-loopback.example.com/', 'ForbiddenAddress'],
    ['https://mapped.example.com/', 'ForbiddenAddress'],
    ['https://nowhere.example.com/', 'UnresolvableHost'],
    ['https://empty.example.com/', 'UnresolvableHost'],
  ])('refuses %s: %s', async (url, issue) => {
    expect(await refusal(checkWebhookUrl(url, strict, resolver))).toEqual({ code: ErrorCode.InvalidParameter, details: { field: 'url', issue } });
  });

  it('resolves names with the system resolver: localhost is loopback', async () => {
    expect(await refusal(checkWebhookUrl('https://localhost:8443/', strict))).toEqual({
      code: ErrorCode.InvalidParameter,
      details: { field: 'url', issue: 'ForbiddenAddress' },
    });
  });

  it('lets allowInsecure accept http, and allowPrivateNetworks any address, never user info', async () => {
    expect((await checkWebhookUrl('http://127.0.0.1:3000/hook', open, resolver)).port).toBe('3000');
    expect((await checkWebhookUrl('http://internal.example.com/hook', open, resolver)).host).toBe('internal.example.com');
    expect((await checkWebhookUrl('http://localhost:3000/hook', open)).hostname).toBe('localhost');
    expect((await refusal(checkWebhookUrl('http://127.0.0.1/', { ...open, allowInsecure: false }, resolver))).details).toEqual({
      field: 'url',
      issue: 'InvalidFormat',
    });
    expect((await refusal(checkWebhookUrl('http://10.0.0.1/', { ...open, allowPrivateNetworks: false }, resolver))).details).toEqual({
      field: 'url',
      issue: 'ForbiddenAddress',
    });
    expect((await refusal(checkWebhookUrl('http://a:b@127.0.0.1/', open, resolver))).details).toEqual({ field: 'url', issue: 'InvalidFormat' });
    expect((await refusal(checkWebhookUrl('http://nowhere.example.com/', open, resolver))).details).toEqual({ field: 'url', issue: 'UnresolvableHost' });
  });

  it('answers 503 ServiceUnavailable when the resolver fails rather than saying the name does not exist', async () => {
    const failing: Resolver = async () => {
      throw Object.assign(new Error('getaddrinfo EAI_AGAIN'), { code: 'EAI_AGAIN' });
    };
    expect((await refusal(checkWebhookUrl('https://hooks.example.com/', strict, failing))).code).toBe(ErrorCode.ServiceUnavailable);
  });
});

describe('safeLookup', () => {
  /** A `dns.lookup` stand-in whose answers a test changes between calls, as a rebinding name would. */
  function rebinding(answers: LookupAddress[][]): typeof dnsLookup {
    let call = 0;
    return ((_hostname: string, _options: unknown, callback: (error: Error | null, addresses: LookupAddress[]) => void) => {
      const answer = answers[Math.min(call++, answers.length - 1)]!;
      queueMicrotask(() => callback(null, answer));
    }) as unknown as typeof dnsLookup;
  }

  function lookupOnce(lookup: ReturnType<typeof safeLookup>, all: boolean): Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family?: number }> {
    return new Promise((resolve) => lookup('hook.test', { all }, (error, address, family) => resolve({ error, address, family })));
  }

  it('answers public addresses in both shapes, and refuses with code ForbiddenAddress what a name resolves to later', async () => {
    const lookup = safeLookup({ allowPrivateNetworks: false }, rebinding([[{ address: '93.184.215.14', family: 4 }], [{ address: '127.0.0.1', family: 4 }]]));
    expect(await lookupOnce(lookup, false)).toEqual({ error: null, address: '93.184.215.14', family: 4 });
    const rebound = await lookupOnce(lookup, true);
    expect(rebound.error?.code).toBe(FORBIDDEN_ADDRESS);
  });

  it('refuses a name with any forbidden address among public ones, IPv6 and mapped forms included', async () => {
    for (const bad of ['::1', '::ffff:10.0.0.1', 'fd00:ec2::254', '169.254.169.254']) {
      const lookup = safeLookup({ allowPrivateNetworks: false }, rebinding([[{ address: '93.184.215.14', family: 4 }, { address: bad, family: bad.includes(':') ? 6 : 4 }]]));
      expect((await lookupOnce(lookup, true)).error?.code, bad).toBe(FORBIDDEN_ADDRESS);
    }
  });

  it('returns every address with all: true, and passes resolver errors through', async () => {
    const both = [{ address: '93.184.215.14', family: 4 }, { address: '2606:4700:4700::1111', family: 6 }];
    expect(await lookupOnce(safeLookup({ allowPrivateNetworks: false }, rebinding([both])), true)).toEqual({ error: null, address: both, family: undefined });
    const missing = safeLookup({ allowPrivateNetworks: false }, ((_h: string, _o: unknown, callback: (error: Error) => void) =>
      callback(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' }))) as unknown as typeof dnsLookup);
    expect((await lookupOnce(missing, false)).error?.code).toBe('ENOTFOUND');
  });

  it('stops a real http request to localhost before it connects, and lets it through with allowPrivateNetworks', async () => {
    let connections = 0;
    const server = createServer((_req, res) => res.end('ok'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const send = (allowPrivateNetworks: boolean) =>
      new Promise<number | string>((resolve) => {
        const outgoing = request({ host: 'localhost', port, path: '/', lookup: safeLookup({ allowPrivateNetworks }), family: 4 }, (response) => {
          response.resume();
          resolve(response.statusCode!);
        });
        outgoing.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
        outgoing.end();
      });
    try {
      expect(await send(false)).toBe(FORBIDDEN_ADDRESS);
      expect(connections).toBe(0);
      expect(await send(true)).toBe(200);
      expect(connections).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
