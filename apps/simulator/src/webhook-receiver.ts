import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type TrackingEvent, verifyWebhook, WebhookVerificationError } from '@tracking/sdk';

/** One delivery the receiver took, with whether its Standard Webhooks signature held. */
export interface Delivery {
  id: string;
  type: string;
  verified: boolean;
  event: TrackingEvent<Record<string, unknown>> | undefined;
  receivedAt: Date;
}

/**
 * A tiny webhook receiver on this machine, as an integrator's would be: it verifies each delivery's
 * signature with the webhook's secret (the SDK's `verifyWebhook`), answers 204 (400 when the signature
 * fails), ignores repeats of a delivery it already took (at least once), and tells `onDelivery`.
 */
export class WebhookReceiver {
  readonly deliveries: Delivery[] = [];
  private secret: string | undefined;
  private server: Server | undefined;

  constructor(private readonly onDelivery: (delivery: Delivery) => void) {}

  /** Listens on `host` (a free port unless `port` is given); answers the URL to register. */
  async listen(host: string, port = 0): Promise<string> {
    const server = createServer((request, response) => {
      void this.take(request).then((status) => {
        response.statusCode = status;
        response.end();
      });
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}/tracking-events`;
  }

  /** The webhook's secret, known once the webhook is created (deliveries before it cannot come). */
  useSecret(secret: string): void {
    this.secret = secret;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async take(request: IncomingMessage): Promise<number> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    if (request.method !== 'POST' || this.secret === undefined) return 404;
    const id = String(request.headers['webhook-id'] ?? '');
    if (this.deliveries.some((delivery) => delivery.id === id && delivery.verified)) return 204;
    let event: TrackingEvent<Record<string, unknown>> | undefined;
    let verified = false;
    try {
      event = verifyWebhook<Record<string, unknown>>(this.secret, request.headers, body);
      verified = true;
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
    }
    const delivery: Delivery = { id, type: event?.type ?? 'unverified', verified, event, receivedAt: new Date() };
    this.deliveries.push(delivery);
    this.onDelivery(delivery);
    return verified ? 204 : 400;
  }
}
