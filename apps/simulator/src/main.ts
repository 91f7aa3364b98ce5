// `npm run simulate`: drives the demo tenant's trips against the stack `npm start` runs (simulation.ts).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { TrackingClient } from '@tracking/sdk';
import { simulate } from './simulation.js';

const USAGE = `npm run simulate [-- --base-url http://localhost:3000] [--time-scale 1] [--credentials .local/demo-credentials.json]

Drives two demo trips (a tracker each, readings every 3 s) through the JSON API with the credentials
npm start printed, with a webhook to a receiver on this machine that prints every delivery. Takes about
three and a half minutes at --time-scale 1; --time-scale 4 takes under one.`;

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const { values } = parseArgs({
  options: {
    'base-url': { type: 'string' },
    'time-scale': { type: 'string', default: '1' },
    credentials: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const timeScale = Number(values['time-scale']);
if (!(timeScale > 0 && timeScale <= 100)) fail(`--time-scale must be a number above 0 and at most 100 (got ${values['time-scale']}).`);
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
  await simulate({ account: client.account(credentials.accountId), timeScale, signal: controller.signal });
  process.stdout.write(`\nSee it yourself: GET ${baseUrl}/v1/accounts/${credentials.accountId}/shipments?reference=SIM-... (track, visits), /alerts, /events.\n`);
} catch (error) {
  if (controller.signal.aborted) fail('Interrupted; the webhook it made is deleted.');
  fail(`The simulation stopped: ${error instanceof Error ? error.message : String(error)}`);
}

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
