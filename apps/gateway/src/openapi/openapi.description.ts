import { readFileSync } from 'node:fs';

/** The product's version: the root package.json, two levels above `apps/gateway/{src,dist}/openapi`. */
export function productVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

export const API_TITLE = 'Tracking API';

/** `info.description`: what every route has in common, which the operations then only refer to. */
export const API_DESCRIPTION = `
Create and follow shipments, their sets and items, points of interest and the IoT devices travelling
with them. Every call goes to this gateway, which authenticates it and forwards it to the service that
owns the data.

## Authentication
Exchange the application's credentials for an access token with \`POST /v1/applications/token\` (no
token needed), then send \`Authorization: Bearer <accessToken>\` on every \`/v1/accounts/{accountId}/...\`
call. Tokens are ES256 JWTs valid 86400 s; cache one and fetch a new one at about 23 h or on a 401. The
keys that verify them are at \`GET /v1/.well-known/jwks.json\`. On an account route the checks come in
this order: 401 \`Unauthorized\` (no, expired or forged token), 400 \`InvalidParameter\` with
\`details.issue\` \`AccountNotFound\` (an account that does not exist or belongs to another tenant), 403
\`Forbidden\` (the application's role does not allow the call).

## Errors
Every error has one envelope:
\`{"error": {"id": "<uuid>", "code": "InvalidParameter", "message": "...", "details": {"field": "limit", "issue": "OutOfRange"}}}\`.
\`code\` is one of \`ErrorCode\` and decides the status; \`details\` comes with some 4xx codes only
(\`InvalidParameter\`: \`field\` and \`issue\`). A 401 carries only \`code\` and \`message\`. A 5xx names
no internal detail; quote its \`id\` when reporting it. Every response carries \`X-Request-Id\`: the one
the request sent when it is 1..128 characters of \`[A-Za-z0-9._:-]\`, else a new UUID.

## Paging
Collections are pages in creation order, oldest first: \`limit\` (1..100, default 50), \`cursor\` (the
previous page's \`metadata.nextCursor\`, passed back unchanged with the same filters) and
\`includeTotal=true\` for \`metadata.total\`. The last page has \`nextCursor: null\`. Paging to the end
shows every record exactly once, including those created meanwhile. Unknown query parameters are 400
\`UnknownField\` on every route.

## Versions and concurrency
Single resources carry a strong \`ETag\` (\`"3"\`). \`PATCH\`, \`DELETE\` and the lifecycle actions take
an optional \`If-Match\` (an ETag, or \`*\`): 412 \`PreconditionFailed\` when the resource has moved on.

## Idempotency
Every authenticated \`POST\` takes an optional \`Idempotency-Key\` (1..255 visible ASCII characters),
scoped to the application. The same key with the same request within 24 h replays the first response
(status, body, \`Location\`, \`ETag\`) with \`Idempotent-Replayed: true\`; with another request it is 422
\`IdempotencyKeyReused\`; while the first still runs, 409 \`IdempotencyKeyInUse\` with \`Retry-After\`.
Validation failures (400) and 5xx are not stored, so retry them with the same key.

## Rate limits
Requests are counted per application (with a valid token) or per client address (without), and the
token endpoint per client address and per tenant, by every gateway replica together. Every response
but the health probes says where the client stands, as in draft-ietf-httpapi-ratelimit-headers:
\`RateLimit-Policy: "application";q=100;w=1;tracking-burst=200\` (\`q\` requests per \`w\` seconds, bursts
up to \`tracking-burst\`) and \`RateLimit: "application";r=57;t=1\` (\`r\` requests available now, \`t\`
seconds until one more is). Over the limit: 429 \`RateLimitExceeded\` with \`Retry-After\` in seconds.

## Availability
The gateway answers 503 \`ServiceUnavailable\` (with \`Retry-After\`) when the service owning the data
does not answer at all or cannot reach its database (the token endpoint too, when the gateway cannot reach
its own), 504 \`GatewayTimeout\` when it answers too late (the change may still have been
made: read before retrying, or retry with the same \`Idempotency-Key\`), 502 \`BadGateway\` for a reply it
cannot use.
`.trim();

/** Every tag an operation may carry, in the order the reference shows them. */
export const TAGS: ReadonlyArray<{ name: string; description: string }> = [
  { name: 'Authentication', description: 'Access tokens for application credentials, and the public keys that verify them.' },
  { name: 'Accounts', description: "The accounts of the token's tenant that the application holds a role on." },
  { name: 'Shipments', description: 'Shipments and their lifecycle: Planned, InTransit, Delivered, then Completed; or Cancelled.' },
  { name: 'Sets', description: 'The sets of a shipment: groups of items travelling together, each with the devices assigned to it.' },
  { name: 'Items', description: 'The items of a set.' },
  { name: 'Points of interest', description: 'Places of an account, used as the origin and destination of shipments.' },
  { name: 'Devices', description: 'The IoT trackers of an account: Available, Assigned to a set, or Retired for good.' },
  {
    name: 'Readings',
    description:
      "What trackers measure, sent in batches (by the role Ingest, Operator or Admin) and read back per device; they move the device's " +
      'lastSeenAt, lastLocation and batteryLevel by event time.',
  },
  {
    name: 'Tracks',
    description:
      "Where a shipment has been: its devices' positions while they were assigned to it, simplified to a number of points, as JSON or GeoJSON.",
  },
  { name: 'Device assignment', description: 'Linking devices to the sets of ongoing shipments, and the devices of a shipment.' },
  { name: 'Operations', description: 'Bulk requests that run in the background, and following their progress and results.' },
  {
    name: 'Alerts and visits',
    description: "What the evaluation of readings found: alerts on a shipment's conditions, and its visits to points of interest.",
  },
  {
    name: 'Share links',
    description:
      'Expiring links that show one shipment to someone without an account (a consignee): the links, the public view they open ' +
      '(the one read without a token), and the tracking page.',
  },
  { name: 'Events', description: "The account's event feed: every change, in the order it was recorded; the events webhooks receive." },
  { name: 'Webhooks', description: 'Signed HTTP deliveries of the account\'s events to URLs of its own, and their delivery log.' },
  { name: 'Health', description: 'Probes for load balancers and orchestrators: never rate limited, no token needed.' },
  { name: 'Console', description: 'The web application for the people who run shipments: a client of this API, served by the gateway.' },
  { name: 'Documentation', description: 'This OpenAPI document and its interactive reference.' },
];
