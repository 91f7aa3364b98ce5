import { execFile, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Account, TrackingClient } from '@tracking/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseSenders, DEFAULT_PROTOCOLS, type DeviceGatewayAddress } from '../../apps/simulator/src/protocols.js';
import { HttpSender, MqttSender, TeltonikaSender, type SimulatedDevice, type SimulatedReading } from '../../apps/simulator/src/senders.js';
import { simulate } from '../../apps/simulator/src/simulation.js';
import { MAX_TEMPERATURE_C, TRIPS } from '../../apps/simulator/src/trips.js';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { eventually } from '../support/eventually.js';
import { freePort, killServices, spawnService } from '../support/processes.js';
import { TestStack } from '../support/stack.js';

const run = promisify(execFile);

/**
 * `npm run simulate` (apps/simulator) against a stack and a device gateway, eight times faster than real
 * time, each trip over the protocol `npm run simulate` picks by default: the cold-chain trip over MQTT,
 * the second over OsmAnd HTTP through the device gateway's own process, the third over Teltonika. Within
 * the run, a newcomer's "done" list must hold: a track per shipment, a departure and an arrival (visits,
 * automatic transitions), a cold-chain alert that opens and closes, and signed webhook deliveries of
 * all of it.
 *
 * The trackers talk to the device gateway's process, as npm start runs it: its HTTP, MQTT and Teltonika
 * listeners, whose addresses its started line names.
 */
describe('the simulator', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let address: DeviceGatewayAddress;
  let account: Account;

  beforeAll(async () => {
    stack = await TestStack.start({
      workers: 1,
      env: {
        // As npm start's short bound: a decision waits at most this long for a silent tracker.
        EVALUATION_LATENESS_SECONDS: '5',
        // npm start allows webhooks to this machine over http://; the receiver is the simulator's own.
        WEBHOOK_ALLOW_INSECURE: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        OUTBOX_POLL_INTERVAL_MS: '100',
      },
    });
    tenant = await createTenant(stack);
    account = new TrackingClient({ baseUrl: stack.baseUrl, tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret }).account(
      tenant.accountIds[0]!,
    );
    const child = await spawnService(stack, 'device-gateway', { DEVICE_HTTP_PORT: '0', DEVICE_MQTT_PORT: '0', DEVICE_MQTTS_PORT: '0', DEVICE_TELTONIKA_PORT: '0' });
    const ready = child.lines().find((line) => line.includes('"msg":"device-gateway started"'))!;
    const listeners = (JSON.parse(ready) as { listeners: { name: string; addresses: string[] }[] }).listeners;
    const port = (name: string) => Number(new URL(listeners.find((listener) => listener.name === name)!.addresses[0]!).port);
    address = { host: '127.0.0.1', httpPort: port('http'), mqttPort: port('mqtt'), teltonikaPort: port('teltonika') };
  }, 120000);
  afterAll(async () => {
    await killServices();
    await stack?.stop();
  });

  /** Every stored reading of a device, oldest first. */
  const readingsOf = (deviceId: string) => account.readings.list(deviceId, { limit: 100 }).toArray();

  it('drives the trips over MQTT, OsmAnd HTTP and Teltonika: tracks grow, departures and arrivals are recorded, an alert opens and closes, and every event arrives signed', async () => {
    const lines: string[] = [];
    const { protocols, senders } = await chooseSenders(DEFAULT_PROTOCOLS, account, address, (line) => lines.push(line));
    // Every listener answers: no trip falls back.
    expect(protocols).toEqual(['mqtt', 'http', 'teltonika']);
    const report = await simulate({ account, senders, timeScale: 8, settleTimeoutMs: 20000, log: (line) => lines.push(line) });
    const output = lines.join('\n');
    expect(output).toMatch(/tracker SIM-\S+ over MQTT, credential Mqtt .*cold chain/);
    expect(output).toMatch(/tracker SIM-\S+ over HTTP, OsmAnd protocol, credential Http/);
    expect(output).toMatch(/tracker SIM-\S+ over Teltonika, credential Teltonika "\d{15}"/);

    expect(report.trips.map((trip) => trip.name)).toEqual(TRIPS.map((trip) => trip.name));
    for (const trip of report.trips) {
      // Every reading on the track: recorded after the assignment, none lost.
      expect(trip.readingsSent, output).toBeGreaterThan(60);
      expect(trip.trackPoints, output).toBe(trip.readingsSent);
      // Arrived at the origin, departed from it (which started the shipment), arrived at the destination (which delivered it).
      expect(trip.visits.map((visit) => [visit.poiId, visit.departedAt !== null]), output).toEqual([
        [trip.originId, true],
        [trip.destinationId, false],
      ]);
      expect(trip.status, output).toBe('Delivered');
    }
    const [coldChain, dry] = report.trips;
    expect(coldChain!.alerts, output).toHaveLength(1);
    expect(coldChain!.alerts[0], output).toMatchObject({ kind: 'TemperatureHigh', status: 'Closed', threshold: MAX_TEMPERATURE_C });
    expect(coldChain!.alerts[0]!.peakValue).toBeGreaterThan(MAX_TEMPERATURE_C);
    for (const trip of report.trips.slice(1)) expect(trip.alerts, output).toEqual([]);

    // What each protocol carried: MQTT everything; OsmAnd speed, heading and battery but no temperature
    // (it has no such parameter); Teltonika speed, heading, battery (IO 113) and temperature (IO 72).
    const [overMqtt, overOsmand, overTeltonika] = await Promise.all(report.trips.map((trip) => readingsOf(trip.deviceId)));
    const moving = (readings: Awaited<ReturnType<typeof readingsOf>>) => readings.filter((reading) => (reading.location?.speedMps ?? 0) > 5);
    for (const readings of [overMqtt!, overOsmand!, overTeltonika!]) {
      expect(moving(readings).length).toBeGreaterThan(20);
      expect(readings.every((reading) => reading.batteryPercent !== null && reading.location?.headingDegrees !== null)).toBe(true);
    }
    expect(overMqtt!.every((reading) => reading.temperatureC !== null)).toBe(true);
    expect(overOsmand!.every((reading) => reading.temperatureC === null)).toBe(true);
    expect(overTeltonika!.every((reading) => reading.temperatureC !== null)).toBe(true);
    // The credentials it made went with the run.
    for (const trip of report.trips) expect(await account.devices.credentials(trip.deviceId).toArray()).toEqual([]);
    expect(dry).toBeDefined();

    // Signed deliveries, each verified by the receiver with the webhook's secret, of what a newcomer wants to see.
    expect(report.deliveries.length, output).toBeGreaterThan(0);
    expect(report.deliveries.every((delivery) => delivery.verified), output).toBe(true);
    const seen = (shipmentId: string) =>
      report.deliveries.filter((delivery) => delivery.event?.data.shipmentId === shipmentId || delivery.event?.data.id === shipmentId).map((delivery) => delivery.type);
    for (const trip of report.trips) {
      expect(seen(trip.shipmentId), output).toEqual(expect.arrayContaining(['shipment.arrived', 'shipment.departed', 'shipment.started', 'shipment.delivered']));
    }
    expect(seen(coldChain!.shipmentId), output).toEqual(expect.arrayContaining(['alert.opened', 'alert.closed']));
    // The same events as the account's feed: the deliveries are the system's events, not made up.
    const deliveredIds = report.deliveries.map((delivery) => delivery.id);
    const feedIds = await eventually(
      async () => {
        const feed = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/events?limit=100`, { token: tenant.token });
        expect(feed.status, feed.text).toBe(200);
        return new Set((feed.body.items as { id: string }[]).map((event) => event.id));
      },
      (ids) => deliveredIds.every((id) => ids.has(id)),
      'every delivered event in the feed',
    );
    expect(deliveredIds.filter((id) => !feedIds.has(id))).toEqual([]);
    // Its webhook is gone with its receiver.
    const webhook = await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/webhooks/${report.webhookId}`, { token: tenant.token });
    expect(webhook.status).toBe(404);
    expect(output).toMatch(/alert\.opened TemperatureHigh "Rotterdam/);
  }, 90000);

  /** A device of the account with a credential of `protocol`, as the simulation prepares one. */
  async function trackerWith(protocol: 'Http' | 'Mqtt', needsTemperature: boolean): Promise<SimulatedDevice> {
    const device = await account.devices.create({ serialNumber: `SIM-TEST-${protocol}-${Date.now()}`, model: 'test' });
    const credential = await account.devices.createCredential(device.id, { protocol });
    return { id: device.id, serialNumber: device.serialNumber, needsTemperature, credential: { id: credential.id, identifier: credential.identifier, secret: credential.secret! } };
  }
  const reading = (secondsAgo: number, temperatureC: number): SimulatedReading => ({
    recordedAt: new Date(Date.now() - secondsAgo * 1000),
    lat: 51.9,
    lng: 4.45,
    accuracyMeters: 5,
    temperatureC,
    batteryPercent: 80,
    speedMps: 10,
    headingDegrees: 90,
  });

  it('sends a cold-chain tracker’s readings over HTTP as device JSON, temperature included, and a wrong secret fails loudly', async () => {
    const sender = new HttpSender(`http://${address.host}:${address.httpPort}`);
    const tracker = await trackerWith('Http', true);
    await sender.send(tracker, [reading(3, 9.5), reading(2, 10.5)]);
    expect((await readingsOf(tracker.id)).map((stored) => stored.temperatureC)).toEqual([9.5, 10.5]);
    const wrong = { ...tracker, credential: { ...tracker.credential!, secret: 'dvs_wrong' } };
    await expect(sender.send(wrong, [reading(1, 4)])).rejects.toThrow(/answered 401/);
  });

  it('sends over MQTT: resolves once acknowledged (after the commit), and a wrong secret is refused at CONNECT', async () => {
    const sender = new MqttSender(`mqtt://${address.host}:${address.mqttPort}`);
    try {
      const tracker = await trackerWith('Mqtt', true);
      await sender.send(tracker, [reading(3, 5.5)]);
      // The PUBACK came: the reading is stored by then, not eventually.
      expect((await readingsOf(tracker.id)).map((stored) => stored.temperatureC)).toEqual([5.5]);
      // A refused reading is acknowledged (it is settled); what was refused comes on the rejected topic, and the next send says it.
      await sender.send(tracker, [reading(2, 1000)]);
      const said = await eventually(
        () => sender.send(tracker, [reading(1, 5.5)]).then(() => 'sent', (error: Error) => error.message),
        (outcome) => outcome !== 'sent',
        'the refusal is reported',
      );
      expect(said).toMatch(/refused readings of SIM-TEST-Mqtt-\d+: .*temperatureC","issue":"OutOfRange"/);
      expect((await readingsOf(tracker.id)).map((stored) => stored.temperatureC)).not.toContain(1000);
      const other = await trackerWith('Mqtt', true);
      await expect(sender.send({ ...other, credential: { ...other.credential!, secret: 'dvs_wrong' } }, [reading(1, 4)])).rejects.toThrow(/bad user name or password/i);
    } finally {
      await sender.close();
    }
  });

  it('sends over Teltonika once the IMEI is accepted, and an IMEI without a credential is refused at the handshake', async () => {
    const sender = new TeltonikaSender(address.host, address.teltonikaPort);
    try {
      const device = await account.devices.create({ serialNumber: `SIM-TEST-Teltonika-${Date.now()}`, model: 'test' });
      const credential = await account.devices.createCredential(device.id, { protocol: 'Teltonika', identifier: sender.identifierFor() });
      const tracker: SimulatedDevice = { id: device.id, serialNumber: device.serialNumber, needsTemperature: true, credential: { id: credential.id, identifier: credential.identifier } };
      await sender.send(tracker, [reading(3, -2.5), reading(2, 3)]);
      // Acknowledged with the record count after the commit: both are stored by then.
      expect((await readingsOf(tracker.id)).map((stored) => [stored.temperatureC, stored.batteryPercent, stored.location?.speedMps])).toEqual([
        [-2.5, 80, 10],
        [3, 80, 10],
      ]);
      const unknown = { ...tracker, id: 'unknown', credential: { id: 'none', identifier: sender.identifierFor() } };
      await expect(sender.send(unknown, [reading(1, 4)])).rejects.toThrow(/refused IMEI \d{15} \(answered 00\)/);
    } finally {
      await sender.close();
    }
  });

  it('refuses a time scale that is not above 0, before it creates anything', async () => {
    const client = new TrackingClient({ baseUrl: stack.baseUrl, tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret });
    await expect(simulate({ account: client.account(tenant.accountIds[0]!), timeScale: 0, log: () => undefined })).rejects.toThrow(/timeScale/);
  });

  it('npm run simulate falls back, saying so, from a protocol whose port does not answer; Ctrl-C stops it and deletes its webhook', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'simulate-'));
    const credentials = join(dir, 'demo-credentials.json');
    await writeFile(credentials, JSON.stringify({ tenantId: tenant.tenantId, applicationId: tenant.applicationId, applicationSecret: tenant.applicationSecret, accountId: tenant.accountIds[0] }));
    const closed = await freePort();
    const child = spawn(
      process.execPath,
      ['apps/simulator/dist/main.js', '--base-url', stack.baseUrl, '--credentials', credentials, '--time-scale', '4', '--device-http-port', String(address.httpPort), '--device-mqtt-port', String(closed), '--device-teltonika-port', String(address.teltonikaPort)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await eventually(
      () => Promise.resolve(stdout),
      (text) => text.includes('Driving in'),
      'the drive starts',
      30000,
    );
    child.kill('SIGINT');
    expect(await exited).toBe(1);
    expect(stdout).toContain(`Trip 1: nothing accepts MQTT on 127.0.0.1:${closed} (is the device gateway running, with that listener?); it goes over HTTP instead.`);
    // The cold-chain trip over HTTP goes as device JSON (OsmAnd has no temperature); the others as asked.
    expect(stdout).toMatch(/"Rotterdam[^"]*": .* over HTTP, device JSON POST \/v1\/readings \(OsmAnd has no temperature\), credential Http/);
    expect(stdout).toMatch(/"Antwerp[^"]*": .* over HTTP, OsmAnd protocol, credential Http/);
    expect(stdout).toMatch(/"Hamburg[^"]*": .* over Teltonika, credential Teltonika/);
    expect(stderr).toContain('Interrupted; the webhook it made is deleted.');
    const webhookId = /Webhook (\S+) sends every event/.exec(stdout)?.[1];
    expect(webhookId, stdout).toBeDefined();
    expect((await stack.request('GET', `/v1/accounts/${tenant.accountIds[0]}/webhooks/${webhookId}`, { token: tenant.token })).status).toBe(404);
    // And the trackers' credentials with it.
    const serials = [...stdout.matchAll(/tracker (SIM-\S+) over/g)].map((match) => match[1]!);
    expect(serials).toHaveLength(TRIPS.length);
    for (const serialNumber of serials) {
      const [device] = await account.devices.list({ serialNumber }).toArray();
      expect(await account.devices.credentials(device!.id).toArray()).toEqual([]);
    }
  }, 60000);

  it('npm run simulate says what is missing or wrong: no credentials from npm start, a bad time scale, protocols or port', async () => {
    const missing = await run(process.execPath, ['apps/simulator/dist/main.js', '--credentials', '/nonexistent/demo-credentials.json']).catch((error: { code: number; stderr: string }) => error);
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining('run npm start first') });
    const scale = await run(process.execPath, ['apps/simulator/dist/main.js', '--time-scale', 'fast']).catch((error: { code: number; stderr: string }) => error);
    expect(scale).toMatchObject({ code: 1, stderr: expect.stringContaining('--time-scale must be a number above 0') });
    const protocols = await run(process.execPath, ['apps/simulator/dist/main.js', '--protocols', 'mqtt,osmand']).catch((error: { code: number; stderr: string }) => error);
    expect(protocols).toMatchObject({ code: 1, stderr: expect.stringContaining('"osmand" is not one') });
    const tooMany = await run(process.execPath, ['apps/simulator/dist/main.js', '--protocols', 'json,json,json,json']).catch((error: { code: number; stderr: string }) => error);
    expect(tooMany).toMatchObject({ code: 1, stderr: expect.stringContaining(`there are ${TRIPS.length} trips`) });
    const port = await run(process.execPath, ['apps/simulator/dist/main.js', '--device-mqtt-port', '70000']).catch((error: { code: number; stderr: string }) => error);
    expect(port).toMatchObject({ code: 1, stderr: expect.stringContaining('--device-mqtt-port must be a port number') });
  });
});
