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

  constructor(
    private readonly prefix: string,
    private readonly natsOptions: NatsServerOptions,
  ) {
    super(natsOptions);
  }

  override bindEvents(client: NatsConnection): void {
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
    await super.close();
  }
}
