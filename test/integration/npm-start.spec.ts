import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { databaseUrl, dropDatabases, testRedisUrl } from '@tracking/testing';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../support/processes.js';

/**
 * The README's quick start, `npm start` (scripts/start.mjs, on the built code), on databases, a NATS
 * prefix, a Redis prefix and a local folder of its own: it must come up, seed the demo tenant and print
 * credentials that really get a token and list the demo shipments.
 */
describe('npm start', () => {
  const prefix = `${inject('runId')}_start_${process.pid}_`;
  const localDir = mkdtempSync(join(tmpdir(), 'tracking-start-'));
  let child: ChildProcess | undefined;

  /** Stops the stack a test left running (one that failed before its own Ctrl-C). */
  async function stopLeftOver(): Promise<void> {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGINT');
      await exited;
    }
  }

  afterAll(async () => {
    await stopLeftOver();
    rmSync(localDir, { recursive: true, force: true });
    await dropDatabases(prefix);
  });

  /** npm start's environment on this test's databases, prefixes, folder and ports. */
  async function startEnv(): Promise<{ env: NodeJS.ProcessEnv; port: number; mqttPort: number; teltonikaPort: number }> {
    const port = await freePort();
    const devicePort = await freePort();
    const mqttPort = await freePort();
    const teltonikaPort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      // The device gateway's listeners on ports of this test's own.
      DEVICE_HTTP_PORT: String(devicePort),
      DEVICE_MQTT_PORT: String(mqttPort),
      DEVICE_TELTONIKA_PORT: String(teltonikaPort),
      OPS_PORT: '0',
      GATEWAY_DATABASE_URL: databaseUrl(`${prefix}gateway`),
      OMS_DATABASE_URL: databaseUrl(`${prefix}oms`),
      DMS_DATABASE_URL: databaseUrl(`${prefix}dms`),
      NATS_SUBJECT_PREFIX: `test.${prefix}.`,
      REDIS_URL: testRedisUrl(),
      REDIS_KEY_PREFIX: `test:${prefix}:`,
      START_LOCAL_DIR: localDir,
      KEY_ENCRYPTION_KEYS: '',
      NODE_ENV: 'development',
    };
    // What a newcomer gets: npm start's own defaults, not the test run's (LOG_LEVEL=silent) or the shell's.
    for (const name of ['LOG_LEVEL', 'LOG_FORMAT', 'EVALUATION_LATENESS_SECONDS', 'FORCE_COLOR']) delete env[name];
    return { env, port, mqttPort, teltonikaPort };
  }

  /**
   * Runs npm start's script with `env` until it says "Press Ctrl-C" (or exits, or 90 s pass): what it
   * printed until then, and its exit.
   */
  async function startStack(env: NodeJS.ProcessEnv): Promise<{ output: string; exited: Promise<number | null> }> {
    await stopLeftOver();
    const started = spawn(process.execPath, ['scripts/start.mjs'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    let output = '';
    started.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => started.once('exit', resolve));
    const deadline = Date.now() + 90_000;
    while (!output.includes('Press Ctrl-C') && Date.now() < deadline && started.exitCode === null) {
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 200))]);
    }
    return { output, exited };
  }

  it('starts the stack, and the demo credentials it prints get a token and list the demo shipments', async () => {
    const { env, port, mqttPort, teltonikaPort } = await startEnv();
    const { output, exited } = await startStack(env);
    expect(output, output).toContain('Press Ctrl-C');
    expect(output).toContain('made a key-encryption key');
    // For people: one readable line per service at the default level, none of Nest's start-up narration
    // (modules initialised, routes mapped: 161 lines before), no JSON; the short lateness bound, said.
    const printed = output.slice(0, output.indexOf('Press Ctrl-C')).split('\n');
    // About 20 lines for the API's stack, and the device gateway's started line, its listeners, its OsmAnd
    // line, its mosquitto_pub line (3 with its heading and blank line) and where Teltonika trackers connect.
    expect(printed.length, output).toBeLessThanOrEqual(32);
    expect(output).not.toMatch(/"level":|InstanceLoader|RouterExplorer|Mapped \{/);
    for (const service of ['gateway', 'oms', 'dms', 'worker', 'device-gateway']) {
      expect(printed.filter((line) => line.includes(`[${service}]`) && line.includes(`${service} started`)), output).toHaveLength(1);
    }
    expect(output).toMatch(/silent for 30 s \(EVALUATION_LATENESS_SECONDS=30 for npm start; 600 by default\)/);

    const credentials = JSON.parse(readFileSync(join(localDir, 'demo-credentials.json'), 'utf8')) as Record<string, string>;
    const base = `http://localhost:${port}`;
    // The credentials as the console's sign-in form labels its fields, and the console they open.
    expect(output).toContain(`Open ${base}/console and sign in with`);
    expect(output).toMatch(new RegExp(`Tenant ID +${credentials.tenantId}\n`));
    expect(output).toMatch(new RegExp(`Application ID +${credentials.applicationId}\n`));
    expect(output).toMatch(new RegExp(`Application secret +${credentials.applicationSecret!.replace(/[^A-Za-z0-9_-]/g, '\\$&')}\n`));
    const consolePage = await fetch(`${base}/console`);
    expect(consolePage.status).toBe(200);
    const html = await consolePage.text();
    for (const label of ['Tenant ID', 'Application ID', 'Application secret']) expect(html).toContain(`>${label}</label>`);
    const token = await fetch(`${base}/v1/applications/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        tenantId: credentials.tenantId,
        applicationId: credentials.applicationId,
        applicationSecret: credentials.applicationSecret,
      }),
    });
    expect(token.status, output).toBe(200);
    const { accessToken } = (await token.json()) as { accessToken: string };
    const list = await fetch(`${base}/v1/accounts/${credentials.accountId}/shipments`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect(list.status).toBe(200);
    const body = (await list.json()) as { items: { id: string; name: string; status: string }[] };
    expect(body.items.map((shipment) => shipment.name)).toEqual(['Rotterdam to Lyon', 'Hamburg to Milan', 'Antwerp to Madrid']);
    // The first one is under way with a short track, so a newcomer sees data at once.
    expect(body.items[0]!.status).toBe('InTransit');
    const track = await fetch(`${base}/v1/accounts/${credentials.accountId}/shipments/${body.items[0]!.id}/track`, {
      headers: { authorization: `Bearer ${accessToken}` },
    });
    expect(track.status).toBe(200);
    expect(((await track.json()) as { points: unknown[] }).points).toHaveLength(30);

    // The OsmAnd line it prints for the demo tracker stores a position, as pasted into a shell.
    const osmand = /curl -s "(http:\/\/127\.0\.0\.1:\d+\/t\/dvs_[A-Za-z0-9_-]+\/\?[^"]+)"/.exec(output);
    expect(osmand, output).not.toBeNull();
    // `$(date +%s)` has whole seconds, and the seeded track runs to a few hundred ms before the start's
    // summary: a paste within the same second would be older than the newest seeded reading, which stays
    // the device's last location. A person pastes later; the test waits for the next whole second.
    const sent = Math.floor(Date.now() / 1000) + 1;
    await new Promise((resolve) => setTimeout(resolve, sent * 1000 - Date.now()));
    const report = await fetch(osmand![1]!.replace('$(date +%s)', String(sent)));
    expect(report.status, await report.text()).toBe(200);
    const devices = (await (await fetch(`${base}/v1/accounts/${credentials.accountId}/devices?serialNumber=DEMO-TRACKER-1`, { headers: { authorization: `Bearer ${accessToken}` } })).json()) as {
      devices: { id: string; lastLocation: { lat: number; recordedAt: string } | null }[];
    };
    expect(devices.devices[0]?.lastLocation).toMatchObject({ lat: 51.9225, recordedAt: new Date(sent * 1000).toISOString() });

    // The mosquitto_pub line it prints stores a reading too, run as pasted into a shell (Mosquitto's own
    // client; QoS 1, so it exits 0 only once its PUBACK came, after the commit).
    const mosquitto = new RegExp(`^mosquitto_pub -h 127\\.0\\.0\\.1 -p ${mqttPort} -u demo-tracker-1 -P dvs_\\S+ -t devices/demo-tracker-1/readings -q 1 -m .+$`, 'm').exec(output);
    expect(mosquitto, output).not.toBeNull();
    // Its `$(date ...)` has whole seconds too: pasted within the OsmAnd reading's second, it would be the
    // same instant with other values (409 ConflictingReading, acknowledged and refused). A person pastes
    // later; the test waits for the next whole second.
    await new Promise((resolve) => setTimeout(resolve, (sent + 1) * 1000 - Date.now()));
    const pasted = spawnSync('bash', ['-c', mosquitto![0]], { encoding: 'utf8', timeout: 20_000 });
    expect(pasted.status, `${pasted.stdout}${pasted.stderr}`).toBe(0);
    const deviceId = devices.devices[0]!.id;
    // From the OsmAnd paste's time on: the seeded track's older readings fill the first page otherwise.
    const readings = (await (await fetch(`${base}/v1/accounts/${credentials.accountId}/devices/${deviceId}/readings?from=${new Date(sent * 1000).toISOString()}`, { headers: { authorization: `Bearer ${accessToken}` } })).json()) as {
      readings: { recordedAt: string; location?: { lat: number; lng: number } }[];
    };
    expect(readings.readings.filter((reading) => reading.location?.lat === 51.9231), JSON.stringify(readings)).toHaveLength(1);
    expect(output).toContain(`Teltonika trackers (Codec 8 / 8 Extended over TCP) connect to this machine's port ${teltonikaPort}; the demo tracker's IMEI is 356307042441013.`);

    child!.kill('SIGINT');
    expect(await exited).toBe(0);
  }, 120_000);

  it('serves on databases its kept demo credentials do not sign in to, and says so instead of printing them', async () => {
    // The databases the test above seeded, and a kept file whose secret is no longer theirs (as after a
    // start on other databases).
    const credentialsFile = join(localDir, 'demo-credentials.json');
    const kept = JSON.parse(readFileSync(credentialsFile, 'utf8')) as Record<string, string>;
    writeFileSync(credentialsFile, JSON.stringify({ ...kept, applicationSecret: `${kept.applicationSecret}x` }));
    const { env, port } = await startEnv();
    const { output, exited } = await startStack(env);
    expect(output, output).toContain('Press Ctrl-C');
    expect(output).toContain(`The demo credentials kept in ${credentialsFile} do not sign in here (401 `);
    expect(output).toContain('holds none of');
    expect(output).not.toContain('Application secret');
    expect((await fetch(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200);

    child!.kill('SIGINT');
    expect(await exited).toBe(0);
  }, 120_000);
});
