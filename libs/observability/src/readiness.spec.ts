import { describe, expect, it } from 'vitest';
import { Readiness } from './readiness.js';

const never = () => new Promise(() => undefined);

describe('Readiness', () => {
  it('is not ready while the service starts', async () => {
    expect(await new Readiness().report()).toEqual({ ready: false, body: { status: 'starting', checks: {} } });
  });

  it('is ready when every required check passes, and reports the others', async () => {
    const readiness = new Readiness();
    readiness.serve({ required: { database: async () => 'row', nats: () => true }, reported: { redis: () => Promise.reject(new Error('down')) } });
    expect(await readiness.report()).toEqual({
      ready: true,
      body: { status: 'ok', checks: { database: 'ok', nats: 'ok', redis: 'failing' } },
    });
  });

  it('fails on a required check that throws, returns false, or does not answer in time', async () => {
    const readiness = new Readiness(50);
    readiness.serve({
      required: {
        throws: () => {
          throw new Error('no');
        },
        refuses: () => false,
        hangs: never,
        passes: () => undefined,
      },
    });
    expect(await readiness.report()).toEqual({
      ready: false,
      body: { status: 'failing', checks: { throws: 'failing', refuses: 'failing', hangs: 'failing', passes: 'ok' } },
    });
  });

  it('is not ready once stopping, whatever the checks say', async () => {
    const readiness = new Readiness();
    readiness.serve({ required: { database: () => true } });
    readiness.stop();
    expect(await readiness.report()).toEqual({ ready: false, body: { status: 'stopping', checks: {} } });
    // A service that finishes starting during a shutdown stays out.
    readiness.serve({ required: { database: () => true } });
    expect((await readiness.report()).body.status).toBe('stopping');
  });

  it('is live unless a liveness check fails while serving', () => {
    const readiness = new Readiness();
    let open = true;
    const throws = (): boolean => {
      throw new Error('no');
    };
    readiness.serve({ required: {}, live: { nats: () => open } });
    expect(readiness.liveness()).toEqual({ live: true, body: { status: 'ok', checks: { nats: 'ok' } } });
    open = false;
    expect(readiness.liveness()).toEqual({ live: false, body: { status: 'failing', checks: { nats: 'failing' } } });
    readiness.serve({ required: {}, live: { nats: () => open, throws } });
    expect(readiness.liveness().body.checks).toEqual({ nats: 'failing', throws: 'failing' });
    // A shutdown closes the connections itself: that is no reason to be restarted.
    readiness.stop();
    expect(readiness.liveness()).toEqual({ live: true, body: { status: 'ok', checks: {} } });
  });
});
