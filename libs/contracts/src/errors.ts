/** Every error code of the public API (docs/api.md, "Errors"). Nothing else names an error. */
export enum ErrorCode {
  InvalidParameter = 'InvalidParameter',
  MalformedRequest = 'MalformedRequest',
  Unauthorized = 'Unauthorized',
  Forbidden = 'Forbidden',
  ShipmentNotExists = 'ShipmentNotExists',
  SetNotExists = 'SetNotExists',
  ItemNotExists = 'ItemNotExists',
  PointOfInterestNotExists = 'PointOfInterestNotExists',
  DeviceNotExists = 'DeviceNotExists',
  OperationNotExists = 'OperationNotExists',
  AlertNotExists = 'AlertNotExists',
  WebhookNotExists = 'WebhookNotExists',
  DeliveryNotExists = 'DeliveryNotExists',
  AssignmentNotExists = 'AssignmentNotExists',
  CredentialNotExists = 'CredentialNotExists',
  ShareLinkNotExists = 'ShareLinkNotExists',
  RouteNotFound = 'RouteNotFound',
  DeviceAlreadyAssigned = 'DeviceAlreadyAssigned',
  InvalidStateTransition = 'InvalidStateTransition',
  ShipmentClosed = 'ShipmentClosed',
  DeviceRetired = 'DeviceRetired',
  DeviceAssigned = 'DeviceAssigned',
  DuplicateSerialNumber = 'DuplicateSerialNumber',
  DuplicateReference = 'DuplicateReference',
  PointOfInterestInUse = 'PointOfInterestInUse',
  OperationFinished = 'OperationFinished',
  IdempotencyKeyInUse = 'IdempotencyKeyInUse',
  WebhookLimitReached = 'WebhookLimitReached',
  DuplicateIdentifier = 'DuplicateIdentifier',
  CredentialLimitReached = 'CredentialLimitReached',
  IdempotencyKeyReused = 'IdempotencyKeyReused',
  PreconditionFailed = 'PreconditionFailed',
  PayloadTooLarge = 'PayloadTooLarge',
  UnsupportedMediaType = 'UnsupportedMediaType',
  RateLimitExceeded = 'RateLimitExceeded',
  InternalError = 'InternalError',
  BadGateway = 'BadGateway',
  ServiceUnavailable = 'ServiceUnavailable',
  GatewayTimeout = 'GatewayTimeout',
}

/** The one table that decides HTTP statuses; the compiler checks that every code has one. */
export const ERROR_STATUS = {
  InvalidParameter: 400,
  MalformedRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  ShipmentNotExists: 404,
  SetNotExists: 404,
  ItemNotExists: 404,
  PointOfInterestNotExists: 404,
  DeviceNotExists: 404,
  OperationNotExists: 404,
  AlertNotExists: 404,
  WebhookNotExists: 404,
  DeliveryNotExists: 404,
  AssignmentNotExists: 404,
  CredentialNotExists: 404,
  ShareLinkNotExists: 404,
  RouteNotFound: 404,
  DeviceAlreadyAssigned: 409,
  InvalidStateTransition: 409,
  ShipmentClosed: 409,
  DeviceRetired: 409,
  DeviceAssigned: 409,
  DuplicateSerialNumber: 409,
  DuplicateReference: 409,
  PointOfInterestInUse: 409,
  OperationFinished: 409,
  IdempotencyKeyInUse: 409,
  WebhookLimitReached: 409,
  DuplicateIdentifier: 409,
  CredentialLimitReached: 409,
  PreconditionFailed: 412,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
  IdempotencyKeyReused: 422,
  RateLimitExceeded: 429,
  InternalError: 500,
  BadGateway: 502,
  ServiceUnavailable: 503,
  GatewayTimeout: 504,
} as const satisfies Record<ErrorCode, number>;

/** `details.issue` values of `InvalidParameter`. */
export enum ParameterIssue {
  Required = 'Required',
  InvalidFormat = 'InvalidFormat',
  OutOfRange = 'OutOfRange',
  UnknownField = 'UnknownField',
  ReadOnly = 'ReadOnly',
  AccountNotFound = 'AccountNotFound',
  InvalidCursor = 'InvalidCursor',
  /** A well-formed id that names no resource of this account, e.g. an `originId` of another account's point of interest. */
  UnknownReference = 'UnknownReference',
  /** An entry of a bulk request repeats an earlier entry's device. */
  Duplicate = 'Duplicate',
  /** A reading repeats the device and `recordedAt` of a stored (or earlier) reading with other measurements. */
  ConflictingReading = 'ConflictingReading',
  /** `after` of `GET /events` names no event of the account's feed (unknown, or past its retention): resync. */
  EventNotFound = 'EventNotFound',
  /** A webhook URL whose host is, or resolves to, an address webhooks may not reach (loopback, private, metadata, ...). */
  ForbiddenAddress = 'ForbiddenAddress',
  /** A webhook URL whose host name does not resolve to any address. */
  UnresolvableHost = 'UnresolvableHost',
}

export type ErrorDetails = Record<string, unknown>;

/** The `error` object of the envelope, as it travels between services and out to clients. */
export interface ErrorBody {
  id?: string;
  code: ErrorCode;
  message: string;
  details?: ErrorDetails;
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_STATUS, value);
}
