import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface ReceivedRequest {
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type ReceiverBehaviour = (request: ReceivedRequest, response: ServerResponse, count: number) => void;

/** A local webhook receiver on 127.0.0.1; `behave` decides each answer (default 204), `received` keeps every request. */
export class WebhookReceiver {
  readonly received: ReceivedRequest[] = [];
  behave: ReceiverBehaviour = (_request, response) => response.writeHead(204).end();
  private readonly server: Server;
  private readonly hanging: ServerResponse[] = [];

  private constructor() {
    this.server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const entry = { at: Date.now(), path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString() };
        this.received.push(entry);
        this.behave(entry, response, this.received.length);
      });
    });
  }

  static async start(): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** Never answers (until closed). */
  hang(): void {
    this.behave = (_request, response) => void this.hanging.push(response);
  }

  byId(id: string): ReceivedRequest[] {
    return this.received.filter((r) => r.headers['webhook-id'] === id);
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
