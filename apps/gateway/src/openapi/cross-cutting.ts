import { CreatedShareLinkDto, PublicTrackingDto } from '../share-links/dto/share-link.dto.js';
import { CredentialWithSecretDto } from '../devices/dto/credential.dto.js';
import {
  getSchemaPath,
  type HeaderObject,
  type MediaTypeObject,
  type OpenAPIObject,
  type OperationObject,
  type ParameterObject,
  type ReferenceObject,
  type ResponseObject,
  type SchemaObject,
} from '@nestjs/swagger';
import { ERROR_STATUS, ErrorCode } from '@tracking/contracts';
import { ErrorEnvelopeDto, PageMetadataDto } from '../http/common.dto.js';
import { OperationDto } from '../operations/dto/operation.dto.js';
import { AlertDto } from '../alerts/alert.dto.js';
import { IngestResultDto } from '../readings/dto/reading.dto.js';
import { TrackDto } from '../tracks/track.dto.js';
import { DeliveryDto } from '../webhooks/dto/webhook.dto.js';
import { codesWithStatus, exampleEnvelope } from './error-examples.js';

/**
 * What routes have in common, added to the generated document in one pass instead of being decorated on
 * every controller, so that a route added later is described like the others without anyone
 * remembering to: request ids, rate limits, idempotency keys, versions, locations, the 5xx of routes that
 * call a service, and the error envelope with an example of each code a response can carry.
 */
export function describeCrossCutting(document: OpenAPIObject): void {
  addComponents(document);
  for (const route of routesOf(document)) describeRoute(document, route);
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
type Method = (typeof METHODS)[number];

interface Route {
  path: string;
  method: Method;
  operation: OperationObject;
}

/** What decides which rules apply to a route. */
interface RouteFacts {
  /** `/health/*`: never rate limited, and their 503 is the readiness report. */
  probe: boolean;
  /** Under `/v1/accounts/{accountId}`: forwarded to the OMS or the DMS. */
  callsServices: boolean;
  /** An authenticated POST: takes an `Idempotency-Key`. */
  keyed: boolean;
  /** Takes `If-Match`. */
  conditional: boolean;
}

const header = (name: string): ReferenceObject => ({ $ref: `#/components/headers/${name}` });
const parameter = (name: string): ReferenceObject => ({ $ref: `#/components/parameters/${name}` });
const ERROR_ENVELOPE = getSchemaPath(ErrorEnvelopeDto);
const UNAUTHORIZED_ENVELOPE = '#/components/schemas/UnauthorizedErrorEnvelope';

/** A pattern for a structured-field list of `item`s (RFC 9651), as rate-limit.headers.ts writes them. */
const listOf = (item: string) => `^${item}(, ${item})*$`;

/** Response headers, as rate-limit.headers.ts, fastify-setup.ts and the controllers write them. */
const RESPONSE_HEADERS: Record<string, HeaderObject> = {
  'X-Request-Id': {
    required: true,
    description: "The request's id: the X-Request-Id the request sent when it is 1..128 characters of [A-Za-z0-9._:-], else a new UUID.",
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
    example: '0190a4a0-1c2d-7e3f-8a9b-0c1d2e3f4a5b',
  },
  'RateLimit-Policy': {
    description:
      'The rate limits the request was counted under (draft-ietf-httpapi-ratelimit-headers): `q` requests per `w` seconds, ' +
      'bursts up to `tracking-burst`. Policies: `application` (requests with a valid token), `address` (others), ' +
      '`token-address` and `token-failures` (the token endpoint, which lists both; `token-failures` counts failed attempts only).',
    schema: { type: 'string', pattern: listOf('"[a-z-]+";q=[0-9]+;w=[0-9]+;tracking-burst=[0-9]+') },
    example: '"application";q=100;w=1;tracking-burst=200',
  },
  RateLimit: {
    description:
      'Where the client stands under each policy: `r` requests available now, `t` whole seconds (at least 1) until one ' +
      'more is; on a 429 `t` equals Retry-After. Absent when the rate limit store did not answer (the request passed uncounted).',
    schema: { type: 'string', pattern: listOf('"[a-z-]+";r=[0-9]+;t=[0-9]+') },
    example: '"application";r=57;t=1',
  },
  'Retry-After': {
    description:
      'Whole seconds to wait, at least 1, before retrying (429, 503, 409 IdempotencyKeyInUse) or looking again (an operation in ' +
      'progress, a delivery on its way).',
    schema: { type: 'integer', minimum: 1 },
    example: 1,
  },
  Location: {
    required: true,
    description:
      "The path of the resource created (201), or where to follow the request (202): its operation, or the webhook's delivery log.",
    schema: { type: 'string', format: 'uri-reference' },
    example: '/v1/accounts/0190a4a0-1111-7000-8000-000000000001/shipments/0190a4a0-7f4a-7e6d-9b3c-5d4e3f2a1b0c',
  },
  ETag: {
    required: true,
    description: "The resource's version as a strong entity tag; send it back in If-Match to change the resource only if nobody else has.",
    schema: { type: 'string', pattern: '^"[0-9]+"$' },
    example: '"3"',
  },
  'Idempotent-Replayed': {
    description: 'Present on a replay: the stored response to an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
  'Idempotent-Stored': {
    description:
      'Present, false, when the outcome of a keyed request was not stored for replay (its stored form is larger than the ' +
      "gateway's limit, 256 KiB by default, or the application's byte budget has no room): the key is free again, a retry " +
      'with it runs the request again.',
    schema: { type: 'string', enum: ['false'] },
  },
};

const REQUEST_HEADERS = {
  RequestId: {
    name: 'X-Request-Id',
    in: 'header',
    required: false,
    description: 'Your id for the request, echoed in the response and carried into every log line; otherwise the gateway makes one.',
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes the POST safe to retry: the same key with the same request within 24 h replays the first response; with another ' +
      'request, 422 IdempotencyKeyReused; while the first runs, 409 IdempotencyKeyInUse. Keys belong to the application. ' +
      'Out of 1..255 characters or not visible ASCII: 400 InvalidParameter (field Idempotency-Key). An application holding ' +
      'too many keys, or too many bytes of stored responses: 429 (details.policy idempotency-keys or idempotency-bytes).',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[!-~]+$' },
    example: 'order-4711-create',
  },
} satisfies Record<string, ParameterObject>;

function addComponents(document: OpenAPIObject): void {
  const components = (document.components ??= {});
  components.headers = { ...components.headers, ...RESPONSE_HEADERS };
  components.parameters = { ...components.parameters, ...REQUEST_HEADERS };
  const schemas = (components.schemas ??= {});
  schemas.UnauthorizedErrorEnvelope = {
    type: 'object',
    description: 'The envelope of a 401: code and message only.',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: { code: { type: 'string', enum: [ErrorCode.Unauthorized] }, message: { type: 'string' } },
      },
    },
  };
  const codes = schemas.ErrorCode as SchemaObject | undefined;
  if (codes) {
    codes.description =
      'What went wrong; it decides the status: ' +
      Object.values(ErrorCode)
        .map((code) => `${code} ${ERROR_STATUS[code]}`)
        .join(', ') +
      '.';
  }
}

function* routesOf(document: OpenAPIObject): Generator<Route> {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation) yield { path, method, operation };
    }
  }
}

function factsOf({ path, method, operation }: Route): RouteFacts {
  const authenticated = (operation.security ?? []).length > 0;
  return {
    probe: path.startsWith('/health/'),
    callsServices: path.startsWith('/v1/accounts/'),
    keyed: authenticated && method === 'post',
    conditional: (operation.parameters ?? []).some((entry) => 'in' in entry && entry.in === 'header' && entry.name === 'If-Match'),
  };
}

/**
 * The errors many routes share, each described once under `components.responses` and referred to by
 * the routes that do not describe that status themselves (those get the sentence added to their own).
 */
const SHARED_ERRORS = {
  RateLimitExceeded: 'RateLimitExceeded: over a rate limit (details.policy names it); retry after Retry-After seconds.',
  InternalError: 'InternalError: the gateway failed unexpectedly; retry with backoff, quoting error.id if it persists.',
  PayloadTooLarge: 'PayloadTooLarge: the body is over 1 MiB (4 MiB for bulk requests).',
  UnsupportedMediaType: 'UnsupportedMediaType: a body that is not Content-Type: application/json.',
  BadGateway: 'BadGateway: the service sent a reply the gateway cannot use.',
  ServiceUnavailable:
    'ServiceUnavailable: no replica of the service owning the data answers, or it cannot reach its database (or, for a POST ' +
    'with an Idempotency-Key, the key store does not answer); retry after Retry-After seconds.',
  GatewayTimeout: 'GatewayTimeout: the service did not answer in time; the request may still take effect.',
  IdempotencyKeyInUse: 'IdempotencyKeyInUse: a request with this Idempotency-Key is still running; retry after Retry-After seconds.',
  IdempotencyKeyReused: 'IdempotencyKeyReused: this Idempotency-Key was used for another request.',
} satisfies Partial<Record<ErrorCode, string>>;
type SharedError = keyof typeof SHARED_ERRORS;

function describeRoute(document: OpenAPIObject, route: Route): void {
  const facts = factsOf(route);
  const { operation } = route;
  // Routes without a token say so explicitly, rather than inheriting a default.
  operation.security ??= [];
  addParameter(operation, 'RequestId');
  if (facts.keyed) addParameter(operation, 'IdempotencyKey');
  sortParameters(route);

  const added = new Map<string, Set<ErrorCode>>();
  const addError = (code: SharedError) => {
    const status = String(ERROR_STATUS[code]);
    const own = operation.responses[status] as ResponseObject | ReferenceObject | undefined;
    if (own === undefined) {
      operation.responses[status] = sharedResponse(document, code);
    } else if (!('$ref' in own)) {
      if (!new RegExp(`\\b${code}\\b`).test(own.description)) own.description = `${own.description} ${SHARED_ERRORS[code]}`.trim();
      added.set(status, (added.get(status) ?? new Set()).add(ErrorCode[code]));
    }
  };
  if (!facts.probe) addError('RateLimitExceeded');
  if (!facts.probe) addError('InternalError');
  if (route.method !== 'get') {
    // Fastify reads the body of any other method before the route runs.
    addError('PayloadTooLarge');
    addError('UnsupportedMediaType');
  }
  if (facts.callsServices) {
    addError('BadGateway');
    addError('ServiceUnavailable');
    addError('GatewayTimeout');
  }
  if (facts.keyed) {
    addError('IdempotencyKeyInUse');
    addError('IdempotencyKeyReused');
  }

  for (const [status, response] of Object.entries(operation.responses) as [string, ResponseObject | ReferenceObject][]) {
    if ('$ref' in response) continue;
    const codes = added.get(status) ?? new Set();
    addResponseHeaders(response, headerNames(document, route, facts, Number(status), response, codes));
    if (Number(status) >= 400) describeErrorContent(document, Number(status), response, codes);
  }
  operation.responses = sortedByStatus(operation.responses);
}

/** `components.responses[code]`, made on first use; the shared errors are never those of a health probe. */
function sharedResponse(document: OpenAPIObject, code: SharedError): ReferenceObject {
  const responses = ((document.components ??= {}).responses ??= {});
  if (!responses[code]) {
    const status = ERROR_STATUS[code];
    const response: ResponseObject = { description: SHARED_ERRORS[code] };
    const names = ['X-Request-Id', 'RateLimit-Policy', 'RateLimit'];
    if (status === 429 || status === 503 || code === ErrorCode.IdempotencyKeyInUse) names.push('Retry-After');
    addResponseHeaders(response, names);
    describeErrorContent(document, status, response, new Set([ErrorCode[code]]));
    responses[code] = response;
  }
  return { $ref: `#/components/responses/${code}` };
}

/** Path parameters in path order and typed (a path segment is a string), then query, then headers. */
function sortParameters({ path, operation }: Route): void {
  const order = (entry: ParameterObject | ReferenceObject) => {
    if ('$ref' in entry) return 3000;
    if (entry.in === 'path') return path.indexOf(`{${entry.name}}`);
    return entry.in === 'query' ? 1000 : 2000;
  };
  for (const entry of operation.parameters ?? []) {
    if (!('$ref' in entry) && entry.in === 'path' && entry.schema && !('$ref' in entry.schema)) entry.schema.type ??= 'string';
  }
  operation.parameters = [...(operation.parameters ?? [])].sort((a, b) => order(a) - order(b));
}

function addParameter(operation: OperationObject, name: keyof typeof REQUEST_HEADERS): void {
  const parameters = (operation.parameters ??= []);
  const { name: headerName } = REQUEST_HEADERS[name];
  const present = parameters.some((entry) => ('$ref' in entry ? entry.$ref === parameter(name).$ref : entry.name === headerName));
  if (!present) parameters.push(parameter(name));
}

function headerNames(
  document: OpenAPIObject,
  { method }: Route,
  facts: RouteFacts,
  status: number,
  response: ResponseObject,
  codes: Set<ErrorCode>,
): string[] {
  const names = ['X-Request-Id'];
  if (!facts.probe) names.push('RateLimit-Policy', 'RateLimit');
  if (status === 201 || status === 202) names.push('Location');
  if (carriesETag(document, method, facts, status, response)) names.push('ETag');
  const followsOperation = bodySchemaRef(response) === getSchemaPath(OperationDto);
  if (status === 429 || status === 503 || status === 202 || followsOperation || codes.has(ErrorCode.IdempotencyKeyInUse)) {
    names.push('Retry-After');
  }
  if (facts.keyed && status < 300) names.push('Idempotent-Replayed', 'Idempotent-Stored');
  return names;
}

function addResponseHeaders(response: ResponseObject, names: string[]): void {
  const headers = (response.headers ??= {});
  for (const name of names) headers[name] ??= header(name);
}

/**
 * `ETag` is on every single resource an account route answers (not on pages), and on the 204 of a
 * conditional write that leaves the resource in place (lifecycle actions, retire); a DELETE leaves no
 * version to name.
 */
function carriesETag(document: OpenAPIObject, method: Method, facts: RouteFacts, status: number, response: ResponseObject): boolean {
  if (!facts.callsServices) return false;
  if (status === 204) return facts.conditional && method !== 'delete';
  if (status < 200 || status > 202) return false;
  const ref = bodySchemaRef(response);
  if (ref !== undefined && UNVERSIONED.has(ref)) return false;
  const schema = ref === undefined ? undefined : (document.components?.schemas?.[ref.replace('#/components/schemas/', '')] as SchemaObject | undefined);
  return schema !== undefined && !isPage(schema);
}

/**
 * Bodies without a version: nothing to put in an `ETag`. A delivery changes only as it is sent; an alert
 * is changed by the evaluation, never by a client's conditional write; a track and an ingest answer are
 * computed views, not resources; a share link changes only by its revocation, which takes no version, and
 * its public view is computed; a device credential changes only by its deletion. `openapi.spec.ts` checks that every header declared here is sent.
 */
const UNVERSIONED: ReadonlySet<string> = new Set(
  [DeliveryDto, AlertDto, TrackDto, IngestResultDto, CreatedShareLinkDto, PublicTrackingDto, CredentialWithSecretDto].map((dto) => getSchemaPath(dto)),
);

/** A collection page: its entries next to the paging `metadata`. */
function isPage(schema: SchemaObject): boolean {
  const metadata = schema.properties?.metadata;
  return metadata !== undefined && '$ref' in metadata && metadata.$ref === getSchemaPath(PageMetadataDto);
}

function bodySchemaRef(response: ResponseObject): string | undefined {
  const schema = response.content?.['application/json']?.schema;
  return schema && '$ref' in schema ? schema.$ref : undefined;
}

/**
 * The envelope schema and one example per code the response can carry: the codes its description names,
 * those added here, or else every code of its status. The examples are shared components, one per code.
 */
function describeErrorContent(document: OpenAPIObject, status: number, response: ResponseObject, addedCodes: Set<ErrorCode> = new Set()): void {
  const content = (response.content ??= {});
  const media: MediaTypeObject = (content['application/json'] ??= {});
  const envelope = status === 401 ? UNAUTHORIZED_ENVELOPE : ERROR_ENVELOPE;
  // A response with a body of its own (the readiness report's 503) is not an error envelope.
  if (media.schema && !('$ref' in media.schema && media.schema.$ref === envelope)) return;
  media.schema = { $ref: envelope };
  const codes = codesWithStatus(status).filter((code) => addedCodes.has(code) || new RegExp(`\\b${code}\\b`).test(response.description));
  const examples = media.examples ?? {};
  if (media.example !== undefined) {
    const code = (media.example as { error?: { code?: string } }).error?.code ?? 'example';
    examples[code] = { summary: code, value: media.example };
    delete media.example;
  }
  const shared = ((document.components ??= {}).examples ??= {});
  for (const code of codes.length > 0 ? codes : codesWithStatus(status)) {
    if (examples[code] !== undefined) continue;
    shared[code] ??= { summary: code, value: exampleEnvelope(code) };
    examples[code] = { $ref: `#/components/examples/${code}` };
  }
  media.examples = examples;
}

function sortedByStatus(responses: OperationObject['responses']): OperationObject['responses'] {
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}
