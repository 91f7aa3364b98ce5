import type { Server } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { type BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';

/** How often `drain` looks whether the clients have closed their connections. */
const DRAIN_POLL_MS = 50;

/**
 * Lets a closing gateway finish without resetting its clients' connections.
 *
 * Closing the HTTP server stops accepting connections and closes the idle keep-alive ones at once; a
 * client that sends its next request on one at that moment (it cannot know) gets a reset, and a POST so
 * cut cannot be told from one that was processed. So the gateway first drains (`drain`, from the
 * process's shutdown): every response says `Connection: close`, and the server waits, up to
 * `HTTP_DRAIN_MS`, for the clients to close their connections after their next request, while the load
 * balancer, told by readiness, sends no new ones. Only then does the application close, and with it the
 * connections still idle. The requests in flight then complete, and their responses close their
 * connections too, as the server and the process would otherwise wait for the client or the 72 s
 * keep-alive timeout.
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

  /** Marks every response `Connection: close`, then waits until no connection is open or `graceMs` has passed. */
  async drain(server: Server, graceMs: number): Promise<void> {
    this.draining = true;
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && (await openConnections(server)) > 0) await delay(DRAIN_POLL_MS);
  }

  /** Nest calls it before it closes the HTTP server (`app.close()`). */
  beforeApplicationShutdown(): void {
    this.draining = true;
  }
}

function openConnections(server: Server): Promise<number> {
  return new Promise((resolve) => server.getConnections((error, count) => resolve(error ? 0 : count)));
}
