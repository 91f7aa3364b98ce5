/** Codes the SDK gives errors that did not come with the API's error envelope (a proxy's page, a bare status). */
const CODE_OF_STATUS: Record<number, string> = {
  400: 'InvalidParameter',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'RouteNotFound',
  409: 'Conflict',
  412: 'PreconditionFailed',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  422: 'IdempotencyKeyReused',
  429: 'RateLimitExceeded',
  500: 'InternalError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'GatewayTimeout',
};

/**
 * An error answer of the API (4xx or 5xx), after the SDK's retries: the envelope's `code`, `message`,
 * `details` and `id` (as `errorId`), the HTTP status, and the response's `X-Request-Id` (quote both when
 * asking for support: the request id finds every log line of the call).
 */
export class TrackingApiError extends Error {
  override readonly name = 'TrackingApiError';
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  readonly errorId: string | undefined;
  readonly requestId: string | undefined;
  /** `Retry-After` of the answer in milliseconds, when it had one. */
  readonly retryAfterMs: number | undefined;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    details?: Record<string, unknown>;
    errorId?: string;
    requestId?: string;
    retryAfterMs?: number;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.errorId = init.errorId;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
  }

  /** The error an HTTP answer carries; a body that is not the envelope still gives a status and a code. */
  static fromBody(status: number, headers: Headers, text: string, retryAfterMs?: number): TrackingApiError {
    const requestId = headers.get('x-request-id') ?? undefined;
    let envelope: unknown;
    try {
      envelope = text ? JSON.parse(text) : undefined;
    } catch {
      envelope = undefined;
    }
    const error = (envelope as { error?: unknown } | undefined)?.error;
    if (error && typeof error === 'object' && typeof (error as { code?: unknown }).code === 'string') {
      const { code, message, details, id } = error as { code: string; message?: unknown; details?: unknown; id?: unknown };
      return new TrackingApiError({
        status,
        code,
        message: typeof message === 'string' ? message : code,
        details: details && typeof details === 'object' ? (details as Record<string, unknown>) : undefined,
        errorId: typeof id === 'string' ? id : undefined,
        requestId,
        retryAfterMs,
      });
    }
    const code = CODE_OF_STATUS[status] ?? (status >= 500 ? 'InternalError' : 'UnexpectedStatus');
    return new TrackingApiError({ status, code, message: `HTTP ${status} without an API error body`, requestId, retryAfterMs });
  }
}

/** `operations.wait` ran out of time before the operation finished; `operation` is the last one seen. */
export class OperationWaitTimeoutError extends Error {
  override readonly name = 'OperationWaitTimeoutError';
  constructor(readonly operation: unknown, timeoutMs: number) {
    super(`The operation did not finish within ${timeoutMs} ms`);
  }
}
