// The console's client of the public API: the session (an access token in sessionStorage, never the
// secret), JSON requests with the token, and the error envelope turned into an ApiError. A browser
// cannot use @tracking/sdk as it stands: its client holds the application secret to renew tokens, which
// the console must not keep; this is the small part of it the console needs.

const SESSION_KEY = 'tracking-console.session';

export class ApiError extends Error {
  constructor(status, body) {
    const error = body && body.error ? body.error : { code: 'HttpError', message: `HTTP ${status}` };
    super(error.message);
    this.status = status;
    this.code = error.code;
    this.details = error.details;
  }
}

/** The signed-in session `{accessToken, expiresAt, tenantId, applicationId}`, or null (none, or expired). */
export function currentSession() {
  let session = null;
  try {
    session = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null');
  } catch {
    session = null;
  }
  if (!session || typeof session.accessToken !== 'string' || !(session.expiresAt > Date.now())) return null;
  return session;
}

/** Exchanges the credentials for a token; keeps the token (not the secret) for this tab only. */
export async function signIn(tenantId, applicationId, applicationSecret) {
  const answer = await send('POST', '/v1/applications/token', { body: { tenantId, applicationId, applicationSecret }, token: null });
  // A minute early: a token that expires in the middle of a page's requests would fail some of them.
  const session = { accessToken: answer.accessToken, expiresAt: Date.now() + (answer.expiresIn - 60) * 1000, tenantId, applicationId };
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  return session;
}

/** Forgets the session: nothing of it stays in the browser's storage. */
export function signOut() {
  sessionStorage.removeItem(SESSION_KEY);
}

/** A request with the session's token; 401 ends the session (the caller shows the sign-in form). */
export async function api(method, path, options = {}) {
  const session = currentSession();
  if (!session) throw new ApiError(401, { error: { code: 'Unauthorized', message: 'Your session has ended: sign in again.' } });
  return send(method, path, { ...options, token: session.accessToken });
}

/**
 * Every record of a collection, page by page (100 a request), up to `max` (the oldest first, as the API
 * orders them): for the short collections of one shipment (alerts, visits, devices).
 */
export async function listAll(path, key, query = {}, max = 1000) {
  const records = [];
  let cursor;
  do {
    const page = await api('GET', withQuery(path, { ...query, limit: 100, cursor }));
    records.push(...page[key]);
    cursor = page.metadata.nextCursor;
  } while (cursor && records.length < max);
  return records;
}

/** `path` with the query parameters that are set. */
export function withQuery(path, query = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

async function send(method, path, { body, token, accept = 'application/json', signal } = {}) {
  const headers = { Accept: accept };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
    credentials: 'omit',
    signal,
  });
  const text = await response.text();
  const parsed = text ? safeJson(text) : undefined;
  if (!response.ok) {
    if (response.status === 401 && token) signOut();
    throw new ApiError(response.status, parsed);
  }
  return parsed;
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
