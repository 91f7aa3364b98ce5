import type { JsonBytes } from '@tracking/messaging';

/** The content type Fastify gives the JSON it encodes itself. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Returns a service's JSON bytes (`ServiceClient.callJson`) as the body, with the content type of any
 * other JSON answer: Fastify writes the bytes as they are instead of encoding an object. Speed machinery
 * (`JsonReply` in `@tracking/messaging`): the simple version returns the object from `ServiceClient.call`.
 */
export function jsonBody<T>(reply: { type(contentType: string): unknown }, json: JsonBytes<T>): JsonBytes<T> {
  reply.type(JSON_CONTENT_TYPE);
  return json;
}
