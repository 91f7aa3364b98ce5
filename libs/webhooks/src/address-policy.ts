import ipaddr from 'ipaddr.js';

/** What the SSRF policy lets a webhook reach (docs/webhooks.md, "SSRF policy"). */
export interface WebhookUrlPolicy {
  /** Plain `http` URLs too (`WEBHOOK_ALLOW_INSECURE`); otherwise `https` only. */
  allowInsecure: boolean;
  /** Any address, loopback and private ones included (`WEBHOOK_ALLOW_PRIVATE_NETWORKS`); for development and tests. */
  allowPrivateNetworks: boolean;
}

/** The cloud metadata endpoints, named apart from the ranges that hold them (link-local, unique-local) for clear messages. */
const METADATA_ADDRESSES = ['169.254.169.254', 'fd00:ec2::254'].map((address) => ipaddr.parse(address).toNormalizedString());

/** IPv6 global unicast (RFC 4291): every reachable public IPv6 address is in it. */
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/**
 * Why a webhook may not reach `address` (an IPv4 or IPv6 literal, without brackets), or null when it may.
 *
 * An allow-list rather than a deny-list: an IPv4 address must be plain unicast in ipaddr.js's
 * classification (not loopback, private, link-local, carrier-grade NAT, broadcast, multicast,
 * unspecified, reserved or any other special range); an IPv6 address must be unicast and inside
 * 2000::/3, which also refuses the IPv4-compatible `::a.b.c.d`, NAT64, 6to4 and Teredo forms, whose
 * embedded IPv4 address could be private. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is judged as
 * the IPv4 address it maps. A string that is no IP address at all is refused (`invalid`).
 */
export function forbiddenAddressReason(address: string): string | null {
  if (!ipaddr.isValid(address)) return 'invalid';
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  if (METADATA_ADDRESSES.includes(parsed.toNormalizedString())) return 'metadata';
  const range = parsed.range();
  if (range !== 'unicast') return range;
  if (parsed.kind() === 'ipv6' && !parsed.match(IPV6_GLOBAL_UNICAST)) return 'reserved';
  return null;
}

/** Whether `address` is one a webhook may not reach under `policy`. */
export function isForbiddenAddress(address: string, policy: Pick<WebhookUrlPolicy, 'allowPrivateNetworks'>): boolean {
  return !policy.allowPrivateNetworks && forbiddenAddressReason(address) !== null;
}
