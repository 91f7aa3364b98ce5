// Follows an account's event feed (GET /events) the way the API suggests for a client without a webhook:
// read it to its end once, then ask every POLL_MS for what came `after` the last event seen. Keeps the
// newest KEEP events in memory for the pages to show; tells listeners of each batch, and whether it is
// live (new since the console opened the account) or history (the first read to the end).
import { api, withQuery } from './api.js';

const POLL_MS = 2000;
const PAGE = 100;
const KEEP = 1000;

export class EventFeed {
  constructor(accountId, onError) {
    this.accountId = accountId;
    this.onError = onError;
    this.events = [];
    this.lastId = null;
    this.live = false;
    this.listeners = new Set();
    this.stopped = false;
    this.timer = undefined;
  }

  /** `listener(events, {live})` for every batch; returns the unsubscribe function. */
  subscribe(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start() {
    this.round();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  async round() {
    if (this.stopped) return;
    try {
      if (this.live) await this.readAfter();
      else await this.readToEnd();
    } catch (error) {
      if (error.code === 'InvalidParameter' && error.details?.issue === 'EventNotFound') {
        // The last event seen has expired from the feed (EVENTS_RETENTION_DAYS): read it again from its start.
        this.live = false;
        this.lastId = null;
        this.events = [];
      } else if (!this.stopped) {
        this.onError(error);
      }
    }
    if (!this.stopped) this.timer = setTimeout(() => this.round(), POLL_MS);
  }

  /** The first read: every page from the start (the feed is oldest first and has no "newest" order). */
  async readToEnd() {
    let cursor;
    do {
      const page = await api('GET', withQuery(`/v1/accounts/${this.accountId}/events`, { limit: PAGE, cursor }));
      this.take(page.items, false);
      cursor = page.metadata.nextCursor;
    } while (cursor && !this.stopped);
    this.live = true;
    this.notify([], false);
  }

  /** Then what came after the last event seen, as many pages as there are. */
  async readAfter() {
    for (;;) {
      const query = this.lastId ? { limit: PAGE, after: this.lastId } : { limit: PAGE };
      const page = await api('GET', withQuery(`/v1/accounts/${this.accountId}/events`, query));
      this.take(page.items, true);
      if (!page.metadata.nextCursor || this.stopped) return;
    }
  }

  take(items, live) {
    if (items.length === 0) return;
    this.lastId = items[items.length - 1].id;
    this.events.push(...items);
    if (this.events.length > KEEP) this.events.splice(0, this.events.length - KEEP);
    this.notify(items, live);
  }

  notify(items, live) {
    for (const listener of this.listeners) listener(items, { live });
  }
}

/** Whether an event concerns the shipment: the shipment itself, or something with its `shipmentId`. */
export function concernsShipment(event, shipmentId) {
  const data = event.data ?? {};
  return event.type.startsWith('shipment.') ? (data.id ?? data.shipmentId) === shipmentId : data.shipmentId === shipmentId;
}
