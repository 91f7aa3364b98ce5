import { type BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';

/**
 * Lets a closing gateway finish: closing the HTTP server stops accepting connections and closes the
 * idle ones, but a keep-alive connection whose request is still running would stay open after its
 * response, and the server with it, until the client or Fastify's 72 s keep-alive timeout ends it.
 * Once the application shuts down, every response therefore closes its connection.
 */
@Injectable()
export class ConnectionDrain implements BeforeApplicationShutdown {
  private draining = false;

  register(instance: FastifyInstance): void {
    instance.addHook('onSend', (_request, reply, payload, done) => {
      if (this.draining) reply.header('connection', 'close');
      done(null, payload);
    });
  }

  /** Nest calls it before it closes the HTTP server (`app.close()`). */
  beforeApplicationShutdown(): void {
    this.draining = true;
  }
}
