import { ERROR_STATUS, ErrorCode, type ErrorDetails, ParameterIssue } from '@tracking/contracts';

const EXAMPLE_ID = '0190a4a0-0000-7000-8000-000000000001';
const EXAMPLE_DEVICE = '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a';
const EXAMPLE_SHIPMENT = '0190a4a0-7f4a-7e6d-9b3c-5d4e3f2a1b0c';

/** A typical answer of each code, for the reference; the compiler checks that every code has one. */
const EXAMPLES = {
  InvalidParameter: { message: 'limit must be between 1 and 100.', details: { field: 'limit', issue: ParameterIssue.OutOfRange } },
  MalformedRequest: { message: 'The request body is not valid JSON.' },
  Unauthorized: { message: 'A valid bearer token is required.' },
  Forbidden: { message: 'The application may not do this on this account.' },
  ShipmentNotExists: { message: 'The shipment does not exist.' },
  SetNotExists: { message: 'The set does not exist in this shipment.' },
  ItemNotExists: { message: 'The item does not exist in this set.' },
  PointOfInterestNotExists: { message: 'The point of interest does not exist.' },
  DeviceNotExists: { message: 'The device does not exist.' },
  OperationNotExists: { message: 'The operation does not exist.' },
  AlertNotExists: { message: 'The alert does not exist.' },
  WebhookNotExists: { message: 'The webhook does not exist.' },
  DeliveryNotExists: { message: 'The delivery does not exist for this webhook.' },
  AssignmentNotExists: { message: 'The device is not assigned to this set.' },
  CredentialNotExists: { message: 'The credential does not exist for this device.' },
  ShareLinkNotExists: { message: 'This link is unknown, has expired or was revoked.' },
  RouteNotFound: { message: 'No such route.' },
  DeviceAlreadyAssigned: {
    message: 'The device is assigned to another shipment; unassign it there first.',
    details: { deviceId: EXAMPLE_DEVICE, shipmentId: EXAMPLE_SHIPMENT },
  },
  InvalidStateTransition: { message: 'Cannot deliver the shipment: its status is Planned; deliver needs InTransit.', details: { from: 'Planned', action: 'deliver' } },
  ShipmentClosed: { message: 'The shipment is Completed; it can no longer change.' },
  DeviceRetired: { message: 'The device is retired.' },
  DeviceAssigned: { message: 'The device is assigned to a shipment; release it first.' },
  DuplicateSerialNumber: { message: 'A device of the tenant already has this serial number.' },
  DuplicateReference: { message: 'Another shipment of the account already has this reference.' },
  PointOfInterestInUse: { message: 'The point of interest is the origin or destination of an ongoing shipment.' },
  OperationFinished: { message: 'The operation has already finished.' },
  WebhookLimitReached: { message: 'The account has 20 webhooks, the most it may have; delete one first.' },
  DuplicateIdentifier: { message: 'Another device already has a credential with this identifier.' },
  CredentialLimitReached: { message: 'The device has 5 credentials, the most it may have; delete one first.' },
  IdempotencyKeyInUse: { message: 'A request with this Idempotency-Key is still running; retry later to get its response.' },
  IdempotencyKeyReused: { message: 'This Idempotency-Key was used for another request; use a new key for a new request.' },
  PreconditionFailed: { message: 'If-Match does not match the current ETag of the resource.' },
  PayloadTooLarge: { message: 'The request body is larger than the limit of 1 MiB (4 MiB for bulk requests).' },
  UnsupportedMediaType: { message: 'Request bodies must be sent as Content-Type: application/json.' },
  RateLimitExceeded: {
    message: 'Too many requests under the rate limit "application"; retry after the Retry-After delay.',
    details: { policy: 'application' },
  },
  InternalError: { message: 'The gateway failed unexpectedly; retry with backoff.' },
  BadGateway: { message: 'The service sent a reply the gateway cannot use.' },
  ServiceUnavailable: { message: 'The service is not available; retry after the Retry-After delay.' },
  GatewayTimeout: { message: 'The service did not answer in time; the request may still take effect.' },
} satisfies Record<ErrorCode, { message: string; details?: ErrorDetails }>;

/** The codes answered with `status`, in the order of the enum. */
export function codesWithStatus(status: number): ErrorCode[] {
  return Object.values(ErrorCode).filter((code) => ERROR_STATUS[code] === status);
}

/** The envelope of `code` as the gateway sends it: a 401 carries only `code` and `message`. */
export function exampleEnvelope(code: ErrorCode): { error: Record<string, unknown> } {
  const { message, ...rest } = EXAMPLES[code];
  if (code === ErrorCode.Unauthorized) return { error: { code, message } };
  return { error: { id: EXAMPLE_ID, code, message, ...rest } };
}
