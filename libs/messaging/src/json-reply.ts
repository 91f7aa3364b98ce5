/**
 * A reply a handler has already encoded as JSON (a page strung together from the rows' stored `api_json`),
 * so that neither the service nor the gateway parses and re-encodes it: the service sends the text as it is
 * to a caller that asked for it (`callJson`), which hands the bytes on to its HTTP client.
 *
 * Speed machinery (docs/architecture.md, "Speed machinery"): the simple version returns the page as an
 * object in Nest's packet, parsed by the gateway and encoded again by Fastify (docs/benchmark-history.md,
 * "Earlier rounds", the second round).
 *
 * `T` is the type of the value the text encodes; it is only a compile-time label.
 */
export class JsonReply<T> {
  declare private readonly encodes?: T;

  /**
   * `json`: the text, or its UTF-8 bytes. Bytes go to the NATS client as they are; a string is encoded
   * by it first, which for a page of 30 KiB flattens the string and copies it twice (`jsonPageBytes`).
   */
  constructor(readonly json: string | Buffer) {}
}

/** The JSON text of a reply of type `T`, as bytes: what `callJson` returns. */
export type JsonBytes<T> = Buffer & { readonly encodes?: T };

/**
 * The NATS header of the negotiation: on a request, "I accept a bare JSON reply"; on a reply, "this
 * payload is the bare JSON of the response" (success only: errors always come as Nest packets). A
 * caller that does not send it gets Nest's packet, with the same JSON inside, so services and callers
 * of different versions keep understanding each other.
 */
export const REPLY_FORMAT_HEADER = 'Tracking-Reply-Format';
export const BARE_JSON = 'json';
