/*
 * A program written against the published @tracking/sdk, as an integrator writes one: installed from the
 * tarball `npm pack` makes, compiled with tsc (strict, web platform types only), run against a real
 * stack. test/integration/sdk-package.spec.ts copies it into an empty project; it is not part of the
 * repository's own compilation.
 */
import { etagOf, type Operation, type Shipment, TrackingApiError, TrackingClient, verifyWebhook, WebhookVerificationError } from '@tracking/sdk';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
declare const process: { env: Record<string, string | undefined> };

const client = new TrackingClient({
  baseUrl: env('TRACKING_BASE_URL'),
  tenantId: env('TRACKING_TENANT_ID'),
  applicationId: env('TRACKING_APPLICATION_ID'),
  applicationSecret: env('TRACKING_APPLICATION_SECRET'),
  retry: { maxAttempts: 4 },
});
const acct = client.account(env('TRACKING_ACCOUNT_ID'));

const created: Shipment = await acct.shipments.create({ name: 'Rotterdam to Lyon', tags: ['packaged'] });
const read = await acct.shipments.get(created.id);
const updated = await acct.shipments.update(created.id, { name: 'Rotterdam to Milan' }, { ifMatch: etagOf(read) });
await acct.shipments.start(created.id);
const names: string[] = [];
for await (const shipment of acct.shipments.list({ status: 'InTransit', limit: 1 })) names.push(shipment.name);

// A track for a map: GeoJSON (empty here: no device reported).
const map = await acct.shipments.trackGeoJson(created.id);
const trackType: 'FeatureCollection' = map.type;

let notFound: { status: number; code: string } | undefined;
try {
  await acct.shipments.get('00000000-0000-7000-8000-000000000000');
} catch (error) {
  if (error instanceof TrackingApiError) notFound = { status: error.status, code: error.code };
}

const device = await acct.devices.create({ serialNumber: `SN-${Date.now()}`, model: 'T4' });
const operation: Operation = await acct.devices.bulkRetire([device.id]);
const done = await acct.operations.wait(operation.id, { timeoutMs: 60000 });
const results = [];
for await (const result of acct.operations.results(operation.id)) results.push(result.status);

let verification = 'accepted';
try {
  verifyWebhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { 'webhook-id': 'x', 'webhook-timestamp': '1', 'webhook-signature': 'v1,AAAA' }, '{}');
} catch (error) {
  if (error instanceof WebhookVerificationError) verification = 'refused';
}

// The types are real: each of these is a compile error that tsc must report.
// @ts-expect-error a shipment has no field `nme`
void (() => acct.shipments.create({ nme: 'typo' }));
// @ts-expect-error bulkRetire takes a list of ids
void (() => acct.devices.bulkRetire(device.id));
// @ts-expect-error ifMatch is a string
void (() => acct.shipments.update(created.id, {}, { ifMatch: 3 }));

console.log(JSON.stringify({ updatedName: updated.name, etag: etagOf(updated), names, trackType, features: map.features.length, notFound, operationStatus: done.status, results, verification }));
