// `npm run simulate`: drives the demo tenant's trips against the stack `npm start` runs (simulation.ts).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { TrackingClient } from '@tracking/sdk';
import { chooseSenders, DEFAULT_PROTOCOLS, type Protocol, parseProtocols } from './protocols.js';
import { simulate } from './simulation.js';
import { TRIPS } from './trips.js';

const USAGE = `npm run simulate [-- --base-url http://localhost:3000] [--time-scale 1] [--credentials .local/demo-credentials.json]
                       [--protocols mqtt,http,teltonika] [--device-host 127.0.0.1]
                       [--device-http-port 5055] [--device-mqtt-port 1884] [--device-teltonika-port 5027]

Drives three demo trips (a tracker each, readings every 3 s) with the credentials npm start printed, with
a webhook to a receiver on this machine that prints every delivery. Takes about three and a half minutes
at --time-scale 1; --time-scale 4 takes under one.

--protocols says how each trip's tracker reports, in the order of the trips (the last one serves the
trips after it): json (the API's POST /readings), http (the device gateway's OsmAnd protocol; device
JSON for the cold-chain trip, since OsmAnd carries no temperature), mqtt, teltonika (Codec 8 over TCP).
Default mqtt,http,teltonika. A protocol whose port does not answer falls back to http (and http to json),
with a notice. The device gateway's address defaults to what npm start uses (DEVICE_HTTP_PORT,
DEVICE_MQTT_PORT, DEVICE_TELTONIKA_PORT in the environment, else 5055, 1884, 5027 on 127.0.0.1).`;

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const { values } = parseArgs({
  options: {
    'base-url': { type: 'string' },
    'time-scale': { type: 'string', default: '1' },
    credentials: { type: 'string' },
    protocols: { type: 'string' },
    'device-host': { type: 'string', default: '127.0.0.1' },
    'device-http-port': { type: 'string', default: process.env.DEVICE_HTTP_PORT ?? '5055' },
    'device-mqtt-port': { type: 'string', default: process.env.DEVICE_MQTT_PORT ?? '1884' },
    'device-teltonika-port': { type: 'string', default: process.env.DEVICE_TELTONIKA_PORT ?? '5027' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const timeScale = Number(values['time-scale']);
if (!(timeScale > 0 && timeScale <= 100)) fail(`--time-scale must be a number above 0 and at most 100 (got ${values['time-scale']}).`);
let protocols: readonly Protocol[] = DEFAULT_PROTOCOLS;
try {
  if (values.protocols !== undefined) protocols = parseProtocols(values.protocols);
} catch (error) {
  fail((error as Error).message);
}
if (protocols.length > TRIPS.length) fail(`--protocols names ${protocols.length} protocols; there are ${TRIPS.length} trips.`);
const port = (flag: 'device-http-port' | 'device-mqtt-port' | 'device-teltonika-port'): number => {
  const value = Number(values[flag]);
  return Number.isInteger(value) && value > 0 && value < 65536 ? value : fail(`--${flag} must be a port number (got ${values[flag]}).`);
};
const gateway = { host: values['device-host'], httpPort: port('device-http-port'), mqttPort: port('device-mqtt-port'), teltonikaPort: port('device-teltonika-port') };
const baseUrl = values['base-url'] ?? `http://localhost:${process.env.PORT ?? 3000}`;
const credentialsFile = values.credentials ?? join(process.env.START_LOCAL_DIR ?? join(root, '.local'), 'demo-credentials.json');
if (!existsSync(credentialsFile)) fail(`${credentialsFile} is missing: run npm start first (it seeds the demo tenant and writes its credentials there).`);
const stored = JSON.parse(readFileSync(credentialsFile, 'utf8')) as Record<string, unknown>;
const field = (name: string): string => {
  const value = stored[name];
  return typeof value === 'string' && value !== '' ? value : fail(`${credentialsFile} has no ${name}.`);
};
const credentials = { tenantId: field('tenantId'), applicationId: field('applicationId'), applicationSecret: field('applicationSecret'), accountId: field('accountId') };

const client = new TrackingClient({ baseUrl, ...credentials });
const controller = new AbortController();
process.once('SIGINT', () => controller.abort(new Error('interrupted')));

try {
  const account = client.account(credentials.accountId);
  const { senders } = await chooseSenders(protocols, account, gateway, (line) => process.stdout.write(`${line}\n`));
  await simulate({ account, timeScale, senders, signal: controller.signal });
  process.stdout.write(`\nSee it yourself: GET ${baseUrl}/v1/accounts/${credentials.accountId}/shipments?reference=SIM-... (track, visits), /alerts, /events.\n`);
} catch (error) {
  if (controller.signal.aborted) fail('Interrupted; the webhook it made is deleted.');
  fail(`The simulation stopped: ${error instanceof Error ? error.message : String(error)}`);
}

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
