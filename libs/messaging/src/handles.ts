import { MessagePattern } from '@nestjs/microservices';
import type { ReplyOf, RequestOf, Subject } from '@tracking/contracts';
import type { JsonReply } from './json-reply.js';

/** What a handler of `S` may return: the reply of its contract, or that reply already encoded (`JsonReply`). */
export type HandlerReply<S extends Subject> = ReplyOf<S> | JsonReply<ReplyOf<S>>;

/** A method that can handle `S`: it takes the subject's request and answers its reply. */
export type HandlerOf<S extends Subject> = (request: RequestOf<S>) => HandlerReply<S> | Promise<HandlerReply<S>>;

/**
 * `@MessagePattern(subject)`, checked against the subject's contract (`Contracts`): a method whose
 * payload or return type does not match the subject's request or reply does not compile. A handler
 * whose contract replies nothing returns nothing; the server sends the caller an empty reply.
 */
export function Handles<S extends Subject>(subject: S) {
  const pattern = MessagePattern(subject);
  return <M extends HandlerOf<S>>(target: object, key: string | symbol, descriptor: TypedPropertyDescriptor<M>): void => {
    pattern(target, key, descriptor);
  };
}
