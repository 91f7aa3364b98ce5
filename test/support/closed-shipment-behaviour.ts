import { beforeAll, describe, expect, it } from 'vitest';
import { expectError } from './http-assertions.js';
import { type ClosedStatus, closeShipment, connectOms, duringClosingTransition } from './oms-database.js';
import { UNKNOWN_ID } from './resource-assertions.js';
import type { RequestOptions, TestStack } from './stack.js';

/** A collection below a shipment (its sets, a set's items); functions, because the stack only exists once the suite runs. */
export interface ShipmentContents {
  stack(): TestStack;
  token(): string;
  /** A new open shipment with one resource below it, the collection path of that resource, and its ETag. */
  newContent(): Promise<{ shipmentId: string; path: string; resource: { id: string }; etag: string }>;
  /** A valid creation body. */
  createBody(): Record<string, unknown>;
  /** A valid patch that changes the resource. */
  change: Record<string, unknown>;
  /** The 404 code of a resource of the collection. */
  notFound: string;
}

/**
 * Registers the tests of "closed shipments take no more changes" for a collection below a shipment:
 * every write is 409 ShipmentClosed once the shipment is Completed or Cancelled (after the 404s and
 * the 412), reads still work, and a write that races with the closing transition waits for it and is
 * refused rather than slipping in.
 */
export function describeClosedShipmentWrites(name: string, contents: () => ShipmentContents): void {
  const send = (method: string, path: string, options: RequestOptions = {}) =>
    contents().stack().request(method, path, { token: contents().token(), ...options });

  describe(name, () => {
    describe.each(['Completed', 'Cancelled'] as const)('%s', (status) => {
      let path: string;
      let resource: { id: string };
      let etag: string;

      beforeAll(async () => {
        const content = await contents().newContent();
        ({ path, resource, etag } = content);
        const oms = await connectOms(contents().stack());
        try {
          await closeShipment(oms, content.shipmentId, status);
        } finally {
          await oms.end();
        }
      });

      it('refuses POST, PATCH and DELETE with 409 ShipmentClosed and changes nothing; reads still work', async () => {
        const one = `${path}/${resource.id}`;
        expectError(await send('POST', path, { body: contents().createBody() }), 409, 'ShipmentClosed');
        expectError(await send('PATCH', one, { body: contents().change }), 409, 'ShipmentClosed');
        // Even a patch that would change nothing.
        expectError(await send('PATCH', one, { body: {}, headers: { 'if-match': etag } }), 409, 'ShipmentClosed');
        expectError(await send('DELETE', one), 409, 'ShipmentClosed');
        expectError(await send('DELETE', one, { headers: { 'if-match': '*' } }), 409, 'ShipmentClosed');
        expect((await send('GET', path)).body.items).toEqual([resource]);
        const fetched = await send('GET', one);
        expect(fetched.body).toEqual(resource);
        expect(fetched.headers.get('etag')).toBe(etag);
      });

      it('answers 404 before 412, and 412 before 409', async () => {
        const { notFound, change } = contents();
        expectError(await send('PATCH', `${path}/${UNKNOWN_ID}`, { body: change }), 404, notFound);
        expectError(await send('DELETE', `${path}/not-a-uuid`), 404, notFound);
        const stale = { headers: { 'if-match': '"99"' } };
        expectError(await send('PATCH', `${path}/${resource.id}`, { body: change, ...stale }), 412, 'PreconditionFailed');
        expectError(await send('DELETE', `${path}/${resource.id}`, stale), 412, 'PreconditionFailed');
      });
    });

    it.each([
      ['POST', 'Cancelled'],
      ['PATCH', 'Completed'],
      ['DELETE', 'Cancelled'],
    ] as const)('%s waits for a transition to %s that locked the shipment first, then answers 409 ShipmentClosed', async (method, status) => {
      const { shipmentId, path, resource } = await contents().newContent();
      const request = {
        POST: () => send('POST', path, { body: contents().createBody() }),
        PATCH: () => send('PATCH', `${path}/${resource.id}`, { body: contents().change }),
        DELETE: () => send('DELETE', `${path}/${resource.id}`),
      }[method];
      const { answer, waited } = await duringClosingTransition(contents().stack(), shipmentId, status as ClosedStatus, request);
      expectError(answer, 409, 'ShipmentClosed');
      expect(waited).toBe(true);
      expect((await send('GET', path)).body.items).toEqual([resource]);
    });
  });
}
