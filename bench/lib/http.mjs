// The benchmark's HTTP client for seeding and preparing data (the measured load uses autocannon).

/** Calls the API; any status other than `expect` throws with the answer, so a seeding error stops the run. */
export async function api(base, method, path, { token, body, expect = [200, 201, 202, 204] } = {}) {
  // A JSON content type only with a body: an empty body declared as JSON is a 400 by design.
  const headers = body === undefined ? {} : { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!expect.includes(response.status)) {
    throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 500)}`);
  }
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

export async function issueToken(base, { tenantId, applicationId, applicationSecret }) {
  const { body } = await api(base, 'POST', '/v1/applications/token', { body: { tenantId, applicationId, applicationSecret } });
  return body.accessToken;
}

/**
 * Runs task(0..count-1) with `concurrency` calls in flight and returns the results in index order,
 * printing progress every few seconds and the overall rate at the end.
 */
export async function inPool(label, count, concurrency, task) {
  const results = new Array(count);
  const started = performance.now();
  let next = 0;
  let done = 0;
  const progress = setInterval(() => {
    const seconds = (performance.now() - started) / 1000;
    process.stdout.write(`  ${label}: ${done}/${count} (${Math.round(done / seconds)}/s)\n`);
  }, 30000);
  async function worker() {
    while (next < count) {
      const index = next++;
      results[index] = await task(index);
      done++;
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  } finally {
    clearInterval(progress);
  }
  const seconds = (performance.now() - started) / 1000;
  const perSecond = Math.round(count / seconds);
  process.stdout.write(`  ${label}: ${count} in ${seconds.toFixed(1)} s (${perSecond}/s, ${concurrency} in flight)\n`);
  return { results, seconds: Math.round(seconds * 10) / 10, perSecond };
}
