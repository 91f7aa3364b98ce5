import { type Account, type Alert, TrackingApiError, type Visit } from '@tracking/sdk';
import { JsonApiSender, type ReadingSender, type SimulatedDevice, type SimulatedReading } from './senders.js';
import { DWELL_SECONDS, MAX_TEMPERATURE_C, PHASES, TRIP_SECONDS, TRIPS, type TripPlan, tripStateAt } from './trips.js';
import { type Delivery, WebhookReceiver } from './webhook-receiver.js';

export interface SimulationOptions {
  /** The account whose shipments are driven (the demo tenant's, from `npm start`). */
  account: Account;
  /** How much faster than real time (1: real time, the default; tests use more). */
  timeScale?: number;
  /** Simulated seconds between two readings of a tracker (default 3). */
  readingIntervalSeconds?: number;
  /**
   * How readings reach the system, one sender per trip in the order of `TRIPS` (the last one serves the
   * trips after it); default the JSON API for every trip. Several trips may share a sender.
   */
  senders?: readonly ReadingSender[];
  /** Where the webhook receiver listens (default 127.0.0.1, a free port); the services must be allowed to reach it. */
  receiverHost?: string;
  receiverPort?: number;
  /** After the drive, how long to wait for the last decisions (arrival, alert closed) in ms (default 90000). */
  settleTimeoutMs?: number;
  /** Where progress lines go (default stdout). */
  log?: (line: string) => void;
  signal?: AbortSignal;
}

export interface TripReport {
  name: string;
  shipmentId: string;
  deviceId: string;
  originId: string;
  destinationId: string;
  readingsSent: number;
  trackPoints: number;
  status: string;
  visits: Visit[];
  alerts: Alert[];
}

export interface SimulationReport {
  trips: TripReport[];
  webhookId: string;
  deliveries: Delivery[];
}

interface RunningTrip {
  plan: TripPlan;
  shipmentId: string;
  device: SimulatedDevice;
  originId: string;
  destinationId: string;
  readingsSent: number;
  battery: number;
  sender: ReadingSender;
}

/**
 * Drives the demo trips (trips.ts) through the API as trackers would: for each, two points of interest
 * (origin and destination), a Planned shipment between them with automatic transitions and a cold-chain
 * limit, a tracker assigned to it; then readings every few seconds in real time (scaled by `timeScale`),
 * and a webhook to a receiver of its own that verifies and prints every delivery. It answers once each
 * trip's arrival is recorded and its alerts closed (or `settleTimeoutMs` passed), with what the API says.
 */
export async function simulate(options: SimulationOptions): Promise<SimulationReport> {
  const { account, signal } = options;
  const scale = options.timeScale ?? 1;
  if (!(scale > 0)) throw new RangeError('timeScale must be above 0');
  const interval = options.readingIntervalSeconds ?? 3;
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const jsonApi = new JsonApiSender(account);
  const senderOf = (index: number): ReadingSender => options.senders?.[index] ?? options.senders?.at(-1) ?? jsonApi;
  const stamp = new Date().toISOString().slice(11, 19);
  const trips: RunningTrip[] = [];
  // Filled as each shipment is created: its first events may arrive before its trip is ready.
  const names = new Map<unknown, string>();
  const nameOf = (shipmentId: unknown) => names.get(shipmentId) ?? String(shipmentId);

  const receiver = new WebhookReceiver((delivery) => log(`webhook   ${describe(delivery, nameOf)}`));
  const url = await receiver.listen(options.receiverHost ?? '127.0.0.1', options.receiverPort ?? 0);
  const webhook = await account.webhooks.create({ url, eventTypes: ['*'], description: `npm run simulate ${stamp}` }, { signal });
  receiver.useSecret(webhook.secret);
  log(`Webhook ${webhook.id} sends every event of the account to ${url}; each delivery's signature is checked.`);
  try {
    // Scaled, so that what happens in event time keeps its proportions: the truck still parks for longer than the dwell.
    const dwellSeconds = Math.max(1, Math.ceil(DWELL_SECONDS / scale));
    for (const [index, plan] of TRIPS.entries()) {
      trips.push(await prepare(account, plan, senderOf(index), `${stamp}-${index + 1}`, dwellSeconds, (id) => names.set(id, plan.name), signal));
    }
    for (const trip of trips) {
      const via = trip.sender.describe?.(trip.device) ?? trip.sender.protocol;
      const credential = trip.device.credential ? `, credential ${trip.sender.credentialProtocol} "${trip.device.credential.identifier}"` : '';
      log(`Trip "${trip.plan.name}": shipment ${trip.shipmentId}, tracker ${trip.device.serialNumber} over ${via}${credential}` + (trip.plan.excursion ? `, cold chain (max ${MAX_TEMPERATURE_C} °C)` : ''));
    }
    log(
      `Driving in ${scale === 1 ? 'real time' : `${scale}x real time`}: ${PHASES.atOrigin} s loading, ${PHASES.driving} s on the road, ${PHASES.atDestination} s unloading; ` +
        `a reading every ${interval} s; arrivals and departures count after ${dwellSeconds} s inside or outside a place.`,
    );
    await drive(trips, { scale, interval, log, signal });
    log('Trips done; waiting for the last decisions (the arrivals, the alerts closing)...');
    const settleDeadline = Date.now() + (options.settleTimeoutMs ?? 90000);
    const reports = await settle(account, trips, settleDeadline, signal);
    await awaitEndings(receiver, reports, settleDeadline, signal);
    for (const report of reports) log(summary(report));
    const verified = receiver.deliveries.filter((delivery) => delivery.verified).length;
    log(`Webhook deliveries: ${receiver.deliveries.length}, ${verified} with a valid signature.`);
    return { trips: reports, webhookId: webhook.id, deliveries: [...receiver.deliveries] };
  } finally {
    // The receiver goes away with this process: a webhook left behind would be retried for days.
    await account.webhooks.delete(webhook.id).catch((error: unknown) => log(`Could not delete webhook ${webhook.id}: ${String(error)}`));
    await receiver.close();
    for (const sender of new Set(trips.map((trip) => trip.sender))) {
      await sender.close().catch((error: unknown) => log(`Could not close the ${sender.protocol} sender: ${String(error)}`));
    }
    // The trackers are simulated: their credentials go with the run, so no secret outlives it.
    for (const { device } of trips) {
      if (!device.credential) continue;
      await account.devices.deleteCredential(device.id, device.credential.id).catch((error: unknown) => log(`Could not delete credential ${device.credential?.id}: ${String(error)}`));
    }
  }
}

async function prepare(
  account: Account,
  plan: TripPlan,
  sender: ReadingSender,
  tag: string,
  dwellSeconds: number,
  onShipment: (shipmentId: string) => void,
  signal: AbortSignal | undefined,
): Promise<RunningTrip> {
  const place = (p: TripPlan['origin']) => ({
    name: `${p.name} (simulated ${tag})`,
    kind: p.kind,
    location: { lat: p.lat, lng: p.lng },
    radiusMeters: p.radiusMeters,
    dwellSeconds,
  });
  const origin = await account.pointsOfInterest.create(place(plan.origin), { signal });
  const destination = await account.pointsOfInterest.create(place(plan.destination), { signal });
  const shipment = await account.shipments.create(
    {
      name: `${plan.name} (simulated ${tag})`,
      reference: `SIM-${tag}`,
      originId: origin.id,
      destinationId: destination.id,
      autoTransitions: true,
      conditions: { temperature: { maxC: MAX_TEMPERATURE_C } },
    },
    { signal },
  );
  onShipment(shipment.id);
  const set = await account.sets.create(shipment.id, { name: 'Pallets', kind: 'Pallet' }, { signal });
  const device = await account.devices.create({ serialNumber: `SIM-${tag}`, model: 'Simulated GPS and temperature tracker' }, { signal });
  await account.sets.assignDevice(shipment.id, set.id, device.id, { signal });
  const simulated: SimulatedDevice = { id: device.id, serialNumber: device.serialNumber, needsTemperature: plan.excursion };
  if (sender.credentialProtocol) {
    const protocol = sender.credentialProtocol;
    const create = () => {
      const identifier = sender.identifierFor?.(simulated);
      return account.devices.createCredential(device.id, { protocol, ...(identifier === undefined ? {} : { identifier }) }, { signal });
    };
    // A made-up identifier (an IMEI) may, rarely, be another device's: a new one is drawn once.
    const credential = await create().catch((error: unknown) => {
      if (error instanceof TrackingApiError && error.code === 'DuplicateIdentifier' && sender.identifierFor) return create();
      throw error;
    });
    simulated.credential = { id: credential.id, identifier: credential.identifier, ...(credential.secret === undefined ? {} : { secret: credential.secret }) };
  }
  return {
    plan,
    sender,
    shipmentId: shipment.id,
    device: simulated,
    originId: origin.id,
    destinationId: destination.id,
    readingsSent: 0,
    battery: 96,
  };
}

/** Sends each trip's readings tick by tick, on a schedule kept against the clock (a slow send does not shift the rest). */
async function drive(
  trips: RunningTrip[],
  run: { scale: number; interval: number; log: (line: string) => void; signal: AbortSignal | undefined },
): Promise<void> {
  const started = Date.now();
  // A reading is stamped when it is "recorded", after its tracker was assigned: never ahead of the clock.
  let lastPhase = new Map<RunningTrip, string>();
  for (let t = 0; t <= TRIP_SECONDS; t += run.interval) {
    const due = started + (t * 1000) / run.scale;
    const wait = due - Date.now();
    if (wait > 0) await sleep(wait, run.signal);
    run.signal?.throwIfAborted();
    const recordedAt = new Date();
    const next = new Map<RunningTrip, string>();
    await Promise.all(
      trips.map(async (trip) => {
        const state = tripStateAt(trip.plan, t);
        trip.battery -= 0.02;
        const reading: SimulatedReading = {
          recordedAt,
          lat: state.lat + noise(0.00002),
          lng: state.lng + noise(0.00003),
          accuracyMeters: Math.round(4 + Math.random() * 6),
          temperatureC: state.temperatureC,
          batteryPercent: Math.round(trip.battery * 10) / 10,
          speedMps: state.speedMps,
          headingDegrees: state.headingDegrees,
        };
        await trip.sender.send(trip.device, [reading]);
        trip.readingsSent++;
        next.set(trip, state.phase);
        const phaseChanged = lastPhase.get(trip) !== state.phase;
        if (phaseChanged || t % 30 < run.interval) {
          const km = (m: number) => (m / 1000).toFixed(1);
          run.log(`tracker   ${trip.device.serialNumber}: ${phaseText(state.phase)}, ${km(state.travelledMeters)} of ${km(state.routeMeters)} km, ${state.temperatureC} °C (t=${t} s)`);
        }
      }),
    );
    lastPhase = next;
  }
}

/** Waits until every trip has arrived (a visit at its destination) with its alerts closed, or `deadline` (epoch ms); answers what the API shows. */
async function settle(account: Account, trips: RunningTrip[], deadline: number, signal: AbortSignal | undefined): Promise<TripReport[]> {
  for (;;) {
    const reports = await Promise.all(trips.map((trip) => reportOf(account, trip, signal)));
    const done = reports.every(
      (report) => report.visits.some((visit) => visit.poiId === report.destinationId) && report.alerts.every((alert) => alert.status === 'Closed'),
    );
    if (done || Date.now() >= deadline) return reports;
    await sleep(1000, signal);
  }
}

/**
 * Waits, until `deadline`, for the webhook deliveries of how the trips ended: `shipment.delivered` of each
 * delivered shipment and `alert.closed` of each closed alert. The API shows them as soon as they commit;
 * their deliveries come through the outbox, the stream and the sender a moment later.
 */
async function awaitEndings(receiver: WebhookReceiver, reports: TripReport[], deadline: number, signal: AbortSignal | undefined): Promise<void> {
  const endings = reports.flatMap((report) => [
    ...(report.status === 'Delivered' ? [{ type: 'shipment.delivered', id: report.shipmentId }] : []),
    ...report.alerts.filter((alert) => alert.status === 'Closed').map((alert) => ({ type: 'alert.closed', id: alert.id })),
  ]);
  const delivered = () =>
    endings.every((ending) => receiver.deliveries.some((delivery) => delivery.type === ending.type && delivery.event?.data.id === ending.id));
  while (!delivered() && Date.now() < deadline) await sleep(200, signal);
}

async function reportOf(account: Account, trip: RunningTrip, signal: AbortSignal | undefined): Promise<TripReport> {
  const [shipment, track, visits, alerts] = await Promise.all([
    account.shipments.get(trip.shipmentId, { signal }),
    account.shipments.track(trip.shipmentId, undefined, { signal }),
    account.shipments.visits(trip.shipmentId, undefined, { signal }).toArray(),
    account.alerts.list({ shipmentId: trip.shipmentId }, { signal }).toArray(),
  ]);
  return {
    name: trip.plan.name,
    shipmentId: trip.shipmentId,
    deviceId: trip.device.id,
    originId: trip.originId,
    destinationId: trip.destinationId,
    readingsSent: trip.readingsSent,
    trackPoints: track.points.length,
    status: shipment.status,
    visits,
    alerts,
  };
}

function summary(report: TripReport): string {
  const place = (poiId: string) => (poiId === report.originId ? 'origin' : poiId === report.destinationId ? 'destination' : poiId);
  const time = (value: string | null) => (value ? value.slice(11, 19) : 'not yet');
  const visits = report.visits.map((visit) => `${place(visit.poiId)} ${time(visit.arrivedAt)}-${time(visit.departedAt)}`).join(', ') || 'none';
  const alerts = report.alerts.map((alert) => `${alert.kind} ${alert.status} ${time(alert.startedAt)}-${time(alert.endedAt)} (peak ${alert.peakValue})`).join(', ') || 'none';
  return `Trip "${report.name}": ${report.status}; track ${report.trackPoints} points of ${report.readingsSent} sent; visits: ${visits}; alerts: ${alerts}.`;
}

function describe(delivery: Delivery, nameOf: (shipmentId: unknown) => string): string {
  if (!delivery.verified || !delivery.event) return `${delivery.id}: signature INVALID`;
  const data = delivery.event.data;
  const shipment = data.shipmentId ?? (typeof data.id === 'string' && delivery.type.startsWith('shipment.') ? data.id : undefined);
  const about = shipment === undefined ? '' : ` "${nameOf(shipment)}"`;
  const extra = delivery.type.startsWith('alert.') ? ` ${String(data.kind)}` : '';
  return `${delivery.type}${extra}${about} (signature valid)`;
}

function phaseText(phase: string): string {
  return phase === 'atOrigin' ? 'loading at the origin' : phase === 'driving' ? 'on the road' : 'unloading at the destination';
}

function noise(scale: number): number {
  return (Math.random() - 0.5) * 2 * scale;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });
}
