/** One request the SDK sent, as a recording fetch saw it. */
export interface FetchRecord {
  method: string;
  /** Path and query, without the base address. */
  path: string;
  /** The status the SDK received (after `intercept`), or `network-error`. */
  status: number | 'network-error';
  /** The status the gateway answered, when the request reached it. */
  realStatus?: number;
  idempotencyKey: string | null;
  authorization: string | null;
  replayed: boolean;
  retryAfter: string | null;
  startedAt: number;
}

export interface InterceptedCall {
  method: string;
  path: string;
  headers: Headers;
  /** Sends the request to the real gateway. */
  forward: () => Promise<Response>;
}

/**
 * A `fetch` for `TrackingClient({ fetch })` that passes every request to the real gateway and records it;
 * `intercept` may act as a proxy in between would: answer instead of the gateway, or replace its answer.
 */
export class RecordingFetch {
  readonly records: FetchRecord[] = [];
  intercept: ((call: InterceptedCall) => Promise<Response>) | undefined;

  readonly fetch: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const record: FetchRecord = {
      method: request.method,
      path: url.pathname + url.search,
      status: 'network-error',
      idempotencyKey: request.headers.get('idempotency-key'),
      authorization: request.headers.get('authorization'),
      replayed: false,
      retryAfter: null,
      startedAt: Date.now(),
    };
    this.records.push(record);
    const forward = async () => {
      const response = await fetch(input, init);
      record.realStatus = response.status;
      return response;
    };
    const response = this.intercept
      ? await this.intercept({ method: request.method, path: record.path, headers: request.headers, forward })
      : await forward();
    record.status = response.status;
    record.replayed = response.headers.get('idempotent-replayed') === 'true';
    record.retryAfter = response.headers.get('retry-after');
    return response;
  };

  /** The records whose method and path match. */
  matching(method: string, path: string | RegExp): FetchRecord[] {
    return this.records.filter((record) => record.method === method && (typeof path === 'string' ? record.path === path : path.test(record.path)));
  }

  get tokenRequests(): FetchRecord[] {
    return this.matching('POST', '/v1/applications/token');
  }
}

/** An error answer in the API's envelope, as a gateway or proxy in front of it would send. */
export function errorResponse(status: number, code: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ error: { id: crypto.randomUUID(), code, message: `${code} (made by the test)` } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}
