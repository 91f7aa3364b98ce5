import { type ErrorBody, ErrorCode, ParameterIssue } from '@tracking/contracts';

/** The most a PUBLISH payload on `devices/{identifier}/readings` may hold. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
/** The most entries of `{"readings":[...]}` in one message. */
export const MAX_READINGS_PER_MESSAGE = 500;

export type PayloadResult = { ok: true; readings: unknown[] } | { ok: false; error: ErrorBody };

/**
 * The readings a PUBLISH payload carries: one reading as a JSON object, or `{"readings":[...]}` with
 * 1..500 entries. Only the envelope is checked here; each entry is judged by the sink, with the same
 * code as `POST /readings`.
 */
export function readingsFromPayload(payload: Buffer): PayloadResult {
  if (payload.length > MAX_PAYLOAD_BYTES) {
    return refuse(ErrorCode.PayloadTooLarge, `The payload has ${payload.length} bytes; at most ${MAX_PAYLOAD_BYTES} are accepted.`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.toString('utf8'));
  } catch {
    return refuse(ErrorCode.MalformedRequest, 'The payload is not JSON.');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return refuse(ErrorCode.MalformedRequest, 'The payload must be a JSON object: one reading, or {"readings":[...]}.');
  }
  if (!Object.hasOwn(parsed, 'readings')) return { ok: true, readings: [parsed] };
  const readings = (parsed as { readings: unknown }).readings;
  if (!Array.isArray(readings)) return refuse(ErrorCode.InvalidParameter, '"readings" must be an array.', ParameterIssue.InvalidFormat);
  if (readings.length < 1 || readings.length > MAX_READINGS_PER_MESSAGE) {
    return refuse(ErrorCode.InvalidParameter, `"readings" must hold 1 to ${MAX_READINGS_PER_MESSAGE} entries; it holds ${readings.length}.`, ParameterIssue.OutOfRange);
  }
  return { ok: true, readings };
}

function refuse(code: ErrorCode, message: string, issue?: ParameterIssue): PayloadResult {
  return { ok: false, error: issue ? { code, message, details: { field: 'readings', issue } } : { code, message } };
}
