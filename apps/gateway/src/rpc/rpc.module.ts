import { Global, Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import type { ReplyOf, RequestOf, Subject } from '@tracking/contracts';
import { connectNats, type JsonBytes, NatsRpcClient } from '@tracking/messaging';
import { ServiceMetrics } from '@tracking/observability';
import type { FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config.js';
import { GATEWAY_CONFIG } from '../tokens.js';

export const NATS_CONNECTION = Symbol('NATS_CONNECTION');

/** Calls a service over NATS on behalf of an HTTP request, carrying its request id. */
@Injectable()
export class ServiceClient implements OnApplicationShutdown {
  private readonly rpc: NatsRpcClient;

  constructor(
    @Inject(NATS_CONNECTION) private readonly connection: NatsConnection,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    metrics: ServiceMetrics,
  ) {
    this.rpc = new NatsRpcClient(connection, config.NATS_SUBJECT_PREFIX, config.RPC_TIMEOUT_MS, metrics, config.NATS_INBOX_PREFIX);
  }

  /** Request and reply types come from the subject's contract (`Contracts`). */
  call<S extends Subject>(subject: S, data: RequestOf<S>, request?: FastifyRequest, timeoutMs?: number): Promise<ReplyOf<S>> {
    return this.rpc.call(subject, data, { requestId: request?.id, timeoutMs });
  }

  /**
   * The response as JSON bytes, for a route that sends it on as it is (`jsonBody`): a service answering
   * with a `JsonReply` sends bytes that nobody parses or encodes again.
   */
  callJson<S extends Subject>(subject: S, data: RequestOf<S>, request?: FastifyRequest, timeoutMs?: number): Promise<JsonBytes<ReplyOf<S>>> {
    return this.rpc.callJson(subject, data, { requestId: request?.id, timeoutMs });
  }

  /** The largest message the NATS server takes (its `max_payload`, 1 MiB unless configured otherwise). */
  maxPayload(): number {
    return this.connection.info?.max_payload ?? 1024 * 1024;
  }

  /** Whether the broker connection is up now (not closed, nor disconnected and reconnecting); readiness uses it. */
  isConnected(): boolean {
    return this.rpc.connected;
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.connection.isClosed()) await this.connection.drain();
  }
}

@Global()
@Module({
  providers: [
    {
      provide: NATS_CONNECTION,
      inject: [GATEWAY_CONFIG],
      // Reconnects forever, with the configured credentials and TLS (`natsConnectionOptions`).
      useFactory: (config: GatewayConfig) => connectNats(config, 'gateway'),
    },
    ServiceClient,
  ],
  exports: [ServiceClient],
})
export class RpcModule {}
