import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { isForbiddenAddress, type WebhookUrlPolicy } from './address-policy.js';

/** The `code` of the error `safeLookup` fails a connection with. */
export const FORBIDDEN_ADDRESS = 'ForbiddenAddress';

/** How long `checkWebhookUrl` waits for the resolver before answering 503. */
export const RESOLVE_TIMEOUT_MS = 5000;

/** Resolves a host name to every address it has (the shape of `dns.lookup` with `all: true`). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

/** The operating system's resolver (`getaddrinfo`, `/etc/hosts` included): what a connection would use. */
export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });

/** Resolver errors that say the name has no address, as opposed to a resolver that failed to answer. */
const NO_SUCH_HOST = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA']);

/**
 * Checks a webhook URL against the SSRF policy and returns it parsed. Throws `DomainError`s:
 * - 400 `InvalidParameter` (field `url`), issue `InvalidFormat`: not an absolute URL, a scheme other
 *   than `https` (or `http` with `allowInsecure`), or user name / password in it;
 * - issue `ForbiddenAddress`: the host is an IP literal, or a name any of whose addresses (IPv4 and
 *   IPv6) is, a loopback, private, link-local, unique-local, carrier-grade NAT, multicast, broadcast,
 *   unspecified, reserved or cloud metadata address (`forbiddenAddressReason`), unless `allowPrivateNetworks`;
 * - issue `UnresolvableHost`: the name has no address at all;
 * - 503 `ServiceUnavailable`: the resolver failed or timed out, so the name could not be judged now.
 *
 * Passing here says what the name resolves to now; the sender must check again at connection time
 * (`safeLookup`), since the name may resolve elsewhere later (DNS rebinding).
 */
export async function checkWebhookUrl(url: string, policy: WebhookUrlPolicy, resolver: Resolver = systemResolver): Promise<URL> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidUrl(ParameterIssue.InvalidFormat, 'url must be an absolute URL.');
  }
  const schemes = policy.allowInsecure ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(parsed.protocol)) {
    throw invalidUrl(ParameterIssue.InvalidFormat, policy.allowInsecure ? 'url must be an https or http URL.' : 'url must be an https URL.');
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw invalidUrl(ParameterIssue.InvalidFormat, 'url may not carry a user name or password; authenticate deliveries by their signature.');
  }
  const host = hostOf(parsed);
  if (host === '') throw invalidUrl(ParameterIssue.InvalidFormat, 'url must name a host.');
  if (policy.allowPrivateNetworks && isIP(host) !== 0) return parsed;
  const addresses = isIP(host) !== 0 ? [host] : (await resolveForCheck(host, resolver)).map(({ address }) => address);
  if (addresses.some((address) => isForbiddenAddress(address, policy))) {
    throw invalidUrl(
      ParameterIssue.ForbiddenAddress,
      'url is, or resolves to, an address webhooks may not reach (loopback, private, link-local, metadata and other special-purpose addresses).',
    );
  }
  return parsed;
}

/**
 * A `lookup` for `http.request`, `net.connect` or undici's `connect` options that resolves like
 * `dns.lookup` and fails with an error whose `code` is `ForbiddenAddress` when any address of the name
 * is one the policy forbids, so that a connection reaches only what the name resolves to at that
 * moment and only when that is allowed. Node does not call `lookup` for an IP literal host: check
 * literals with `isForbiddenAddress` (or `checkWebhookUrl`) before connecting.
 */
export function safeLookup(policy: Pick<WebhookUrlPolicy, 'allowPrivateNetworks'>, resolve: typeof dnsLookup = dnsLookup): LookupFunction {
  return (hostname: string, options: LookupOptions, callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, options.all ? [] : '', undefined);
      const forbidden = addresses.find(({ address }) => isForbiddenAddress(address, policy));
      if (forbidden) {
        const refusal: NodeJS.ErrnoException = new Error(`${hostname} resolves to ${forbidden.address}, an address webhooks may not reach`);
        refusal.code = FORBIDDEN_ADDRESS;
        return callback(refusal, options.all ? [] : '', undefined);
      }
      const [first] = addresses;
      if (first === undefined) {
        const none: NodeJS.ErrnoException = new Error(`${hostname} has no address`);
        none.code = 'ENOTFOUND';
        return callback(none, options.all ? [] : '', undefined);
      }
      if (options.all) return callback(null, addresses);
      callback(null, first.address, first.family);
    });
  };
}

/** The URL's host as the resolver and the address checks want it: IPv6 literals without their brackets. */
function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

async function resolveForCheck(host: string, resolver: Resolver): Promise<LookupAddress[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('resolver timed out'), { code: 'ETIMEOUT' })), RESOLVE_TIMEOUT_MS);
  });
  try {
    const addresses = await Promise.race([resolver(host), timeout]);
    if (addresses.length === 0) throw Object.assign(new Error('no address'), { code: 'ENODATA' });
    return addresses;
  } catch (error) {
    if (NO_SUCH_HOST.has((error as NodeJS.ErrnoException).code ?? '')) {
      throw invalidUrl(ParameterIssue.UnresolvableHost, "url's host name does not resolve to any address.");
    }
    throw new DomainError(ErrorCode.ServiceUnavailable, "url's host name could not be resolved right now; try again shortly.");
  } finally {
    clearTimeout(timer);
  }
}

function invalidUrl(issue: ParameterIssue, message: string): DomainError {
  return DomainError.invalidParameter('url', issue, message);
}
