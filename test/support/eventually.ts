/**
 * Reads until `done` holds, every 50 ms, failing after `deadlineMs` with the last value read: for what an
 * asynchronous path (a stream consumer, a webhook delivery) makes true some time after the request. The
 * deadline bounds a failing test; a passing one returns as soon as the condition holds.
 */
export async function eventually<T>(read: () => Promise<T> | T, done: (value: T) => boolean, what: string, deadlineMs = 15000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${deadlineMs} ms; last: ${JSON.stringify(value)?.slice(0, 2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}
