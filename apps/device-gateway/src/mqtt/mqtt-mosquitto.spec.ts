import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestAuthenticator, TestSink } from '../../../../test/support/device-doubles.js';
import { makeTlsFiles } from '../../../../test/support/tls-files.js';
import { MqttListener } from './mqtt-listener.js';

/**
 * The listener driven by Mosquitto's own command-line clients (mosquitto_pub, mosquitto_sub): an MQTT
 * implementation nobody here wrote, as a tracker vendor's engineer would first try us.
 */

const SECRET = 'dvs_mosquitto-secret';
const reading = JSON.stringify({ recordedAt: '2026-01-01T00:00:00.000Z', location: { lat: 52.5, lng: 13.4 } });

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a Mosquitto client to its end; `timeout` bounds a hung client so a failing spec says so. */
function mosquitto(command: 'mosquitto_pub' | 'mosquitto_sub', args: string[], onStdout?: (text: string) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    // stdbuf: line-buffered stdout, so that a spec can act on a line (SUBACK) while the client still runs.
    const child = spawn('stdbuf', ['-oL', command, ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 15_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      onStdout?.(stdout);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('MQTT listener with Mosquitto clients', () => {
  const auth = new TestAuthenticator();
  const sink = new TestSink();
  let listener: MqttListener;
  let port: number;
  let tlsPort: number;
  let tls: ReturnType<typeof makeTlsFiles>;
  const base = () => ['-h', '127.0.0.1', '-p', String(port), '-u', 'tracker-9', '-P', SECRET];

  beforeAll(async () => {
    auth.add('tracker-9', SECRET);
    tls = makeTlsFiles();
    listener = new MqttListener(auth, sink, { port: 0, host: '127.0.0.1', tls: { cert: readFileSync(tls.serverCert), key: readFileSync(tls.serverKey), port: 0 } });
    const started = await listener.start();
    port = started.port;
    tlsPort = started.tlsPort ?? 0;
  });

  afterAll(async () => {
    await listener.stop();
    tls.remove();
  });

  it.each(['mqttv311', 'mqttv5'])('mosquitto_pub %s: a QoS 1 reading is stored and acknowledged', async (version) => {
    const before = sink.submissions.length;
    const run = await mosquitto('mosquitto_pub', [...base(), '-V', version, '-q', '1', '-t', 'devices/tracker-9/readings', '-m', reading]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(sink.submissions.slice(before).map((s) => s.readings)).toEqual([[JSON.parse(reading)]]);
  });

  it('mosquitto_pub over TLS with the CA file', async () => {
    const before = sink.submissions.length;
    const run = await mosquitto('mosquitto_pub', [...base(), '-p', String(tlsPort), '--cafile', tls.ca, '-q', '1', '-t', 'devices/tracker-9/readings', '-m', reading]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(sink.submissions.length).toBe(before + 1);
  });

  it.each(['mqttv311', 'mqttv5'])('mosquitto_pub %s: a wrong password is refused as "bad user name or password"', async (version) => {
    const run = await mosquitto('mosquitto_pub', [...base(), '-P', 'dvs_wrong', '-V', version, '-q', '1', '-t', 'devices/tracker-9/readings', '-m', reading]);
    expect(run.code).not.toBe(0);
    expect(run.stderr.toLowerCase()).toContain('bad user name or password');
  });

  it('mosquitto_pub mqttv5: a publish to another device\'s topic is not stored', async () => {
    const before = sink.submissions.length;
    const run = await mosquitto('mosquitto_pub', [...base(), '-V', 'mqttv5', '-q', '1', '-t', 'devices/someone-else/readings', '-m', reading, '-d']);
    // mosquitto_pub prints the PUBACK it got; 135 is 0x87 (not authorized).
    expect(run.stdout).toMatch(/PUBACK.*\(Mid: 1, RC:135\)/);
    expect(sink.submissions.length).toBe(before);
  });

  it('mosquitto_sub on devices/{identifier}/rejected hears why a garbage payload was not stored', async () => {
    let subscribed!: () => void;
    const ready = new Promise<void>((resolve) => (subscribed = resolve));
    // -d prints the SUBACK, so the publish below goes out once the subscription exists.
    const sub = mosquitto('mosquitto_sub', [...base(), '-i', 'listener-sub', '-V', 'mqttv5', '-t', 'devices/tracker-9/rejected', '-C', '1', '-W', '10', '-d'], (text) => {
      if (text.includes('SUBACK')) subscribed();
    });
    await ready;
    const before = sink.submissions.length;
    const pub = await mosquitto('mosquitto_pub', [...base(), '-V', 'mqttv5', '-q', '1', '-t', 'devices/tracker-9/readings', '-m', 'this is not json', '-d']);
    expect(pub.stdout).toMatch(/PUBACK.*RC:153/); // 0x99 payload format invalid
    const run = await sub;
    expect(run.code).toBe(0);
    const line = run.stdout.split('\n').find((l) => l.startsWith('{'));
    expect(JSON.parse(line!)).toEqual({ error: { code: 'MalformedRequest', message: 'The payload is not JSON.' } });
    expect(sink.submissions.length).toBe(before);
  });

  it('mosquitto_sub mqttv311: a subscription to another device\'s topics is refused', async () => {
    const run = await mosquitto('mosquitto_sub', [...base(), '-V', 'mqttv311', '-t', 'devices/#', '-E', '-d']);
    expect(run.stdout).toMatch(/SUBACK/);
    expect(`${run.stdout}${run.stderr}`).toContain('All subscription requests were denied');
  });
});
