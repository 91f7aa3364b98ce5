import { ServerNats } from '@nestjs/microservices';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';

type NatsServerOptions = ConstructorParameters<typeof ServerNats>[0];

/**
 * Nest's NATS transport with every subscription under a configured subject prefix, so that test
 * runs and environments sharing one NATS server never answer each other. Handlers keep the plain
 * subject of `@tracking/contracts` as their pattern.
 */
export class PrefixedNatsServer extends ServerNats {
  private readonly prefixedSubscriptions: Subscription[] = [];
  private connection: NatsConnection | undefined;

  constructor(
    private readonly prefix: string,
    private readonly natsOptions: NatsServerOptions,
  ) {
    super(natsOptions);
  }

  /**
   * Nest reports the server as listening once the subscriptions are queued on the socket, before
   * the broker has them; a request in that gap gets "no responders" (a 503 from a running replica).
   * A flush round trip closes the gap.
   */
  override start(callback: (err?: unknown) => void): void {
    const client = this.unwrap<NatsConnection>();
    this.bindEvents(client);
    client.flush().then(() => callback(), callback);
  }

  override bindEvents(client: NatsConnection): void {
    this.connection = client;
    for (const [channel, handler] of this.messageHandlers) {
      const queue = (handler.extras?.queue as string | undefined) ?? this.natsOptions.queue;
      const subscription = client.subscribe(this.prefix + channel, {
        ...(queue ? { queue } : {}),
        callback: this.getMessageHandler(channel).bind(this) as never,
      });
      this.prefixedSubscriptions.push(subscription);
    }
  }

  override async close(): Promise<void> {
    for (const subscription of this.prefixedSubscriptions.splice(0)) subscription.unsubscribe();
    // Likewise on the way out: once close() returns, the broker routes no request here any more.
    if (this.connection && !this.connection.isClosed()) await this.connection.flush();
    this.connection = undefined;
    await super.close();
  }
}
