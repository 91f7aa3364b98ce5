/**
 * The NATS header in which a request says how long its caller waits for the reply (ms, from sending).
 * The service can then stop work nobody waits for, such as a database statement
 * (docs/failure-semantics.md, "A read that outlives its caller").
 */
export const RPC_TIMEOUT_HEADER = 'x-rpc-timeout-ms';
/** The NATS header holding when the request was sent (epoch ms on the sender's clock). */
export const RPC_SENT_AT_HEADER = 'x-rpc-sent-at';

/**
 * When the caller of a request stops waiting (epoch ms on this process's clock), from its headers;
 * undefined without a usable timeout.
 *
 * The timeout counts from the arrival (`now`), less the time the request took to get here as the two
 * clocks tell it (`now - sentAt`): on a loaded host a message can wait in the broker's and this
 * process's queues for a good part of its caller's timeout, and counting from the arrival alone would put
 * the deadline that much after the caller's. The clocks are trusted only so far: a negative transit
 * counts as none, and no more than half the timeout is taken off, so a host whose clock runs ahead of the
 * sender's shortens a request's time by at most half and never refuses it outright. Without `sentAt` (an
 * older sender), the timeout counts from the arrival.
 */
export function rpcDeadline(timeoutHeader: string | undefined, sentAtHeader: string | undefined, now: number): number | undefined {
  if (!timeoutHeader) return undefined;
  const timeoutMs = Number(timeoutHeader);
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) return undefined;
  const sentAt = sentAtHeader ? Number(sentAtHeader) : NaN;
  const transitMs = Number.isFinite(sentAt) ? Math.min(Math.max(0, now - sentAt), timeoutMs / 2) : 0;
  return now + timeoutMs - transitMs;
}
