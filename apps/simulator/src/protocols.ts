import { connect } from 'node:net';
import type { Account } from '@tracking/sdk';
import { HttpSender, JsonApiSender, MqttSender, type ReadingSender, TeltonikaSender } from './senders.js';

/** How a trip's readings travel: the JSON API, or one of the device gateway's protocols. */
export const PROTOCOLS = ['json', 'http', 'mqtt', 'teltonika'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

/** Trip 1 (the cold chain) over MQTT, trip 2 over OsmAnd HTTP, trip 3 over Teltonika. */
export const DEFAULT_PROTOCOLS: readonly Protocol[] = ['mqtt', 'http', 'teltonika'];

/** Where the device gateway listens; `npm start` uses these ports on 127.0.0.1. */
export interface DeviceGatewayAddress {
  host: string;
  httpPort: number;
  mqttPort: number;
  teltonikaPort: number;
}

/** `--protocols mqtt,http,teltonika`: one a trip, in the order of the trips. Throws a RangeError naming what is wrong. */
export function parseProtocols(text: string): Protocol[] {
  const names = text.split(',').map((name) => name.trim().toLowerCase());
  const wrong = names.filter((name) => !(PROTOCOLS as readonly string[]).includes(name));
  if (names.length === 0 || wrong.length > 0) {
    throw new RangeError(`--protocols takes a comma-separated list of ${PROTOCOLS.join(', ')} (one a trip); ${wrong.map((name) => JSON.stringify(name)).join(', ')} is not one`);
  }
  return names as Protocol[];
}

/** Whether something accepts TCP connections at host:port within `timeoutMs` (the connection is closed at once). */
export function probe(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (reachable: boolean) => {
      socket.destroy();
      resolve(reachable);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * One sender per requested protocol, each used only if its listener answers: a protocol whose port does
 * not accept connections falls back (MQTT and Teltonika to HTTP, HTTP to the JSON API) with a line in
 * `notices` saying so, so that `npm run simulate` works against a device gateway that does not serve
 * every protocol yet. Trips asking for the same protocol share its sender.
 */
export async function chooseSenders(
  requested: readonly Protocol[],
  account: Account,
  gateway: DeviceGatewayAddress,
  notices: (line: string) => void,
  timeoutMs = 1000,
): Promise<{ protocols: Protocol[]; senders: ReadingSender[] }> {
  const reachable = new Map<Protocol, Promise<boolean>>();
  const portOf = { json: 0, http: gateway.httpPort, mqtt: gateway.mqttPort, teltonika: gateway.teltonikaPort } as const;
  const isReachable = (protocol: Protocol) => {
    if (protocol === 'json') return Promise.resolve(true);
    let answer = reachable.get(protocol);
    if (!answer) {
      answer = probe(gateway.host, portOf[protocol], timeoutMs);
      reachable.set(protocol, answer);
    }
    return answer;
  };
  const fallback = { mqtt: 'http', teltonika: 'http', http: 'json' } as const;
  const names: Record<Protocol, string> = { json: 'JSON API', http: 'HTTP', mqtt: 'MQTT', teltonika: 'Teltonika' };
  const protocols: Protocol[] = [];
  for (const [index, wanted] of requested.entries()) {
    let protocol = wanted;
    while (protocol !== 'json' && !(await isReachable(protocol))) {
      const next: Protocol = fallback[protocol];
      notices(`Trip ${index + 1}: nothing accepts ${names[protocol]} on ${gateway.host}:${portOf[protocol]} (is the device gateway running, with that listener?); it goes over ${names[next]} instead.`);
      protocol = next;
    }
    protocols.push(protocol);
  }
  const made = new Map<Protocol, ReadingSender>();
  const senderOf = (protocol: Protocol): ReadingSender => {
    const existing = made.get(protocol);
    if (existing) return existing;
    const host = gateway.host.includes(':') ? `[${gateway.host}]` : gateway.host;
    const sender =
      protocol === 'json'
        ? new JsonApiSender(account)
        : protocol === 'http'
          ? new HttpSender(`http://${host}:${gateway.httpPort}`)
          : protocol === 'mqtt'
            ? new MqttSender(`mqtt://${host}:${gateway.mqttPort}`)
            : new TeltonikaSender(gateway.host, gateway.teltonikaPort);
    made.set(protocol, sender);
    return sender;
  };
  return { protocols, senders: protocols.map(senderOf) };
}
