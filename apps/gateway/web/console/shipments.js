// The shipment list (paged as the API pages: a cursor forward, the cursors seen to go back) and a
// shipment's page: its map (track, origin and destination circles, position, visits), alerts with
// acknowledge, events, visits and devices. Both read again every REFRESH_MS (refresh.js) and when the account's event
// feed brings something about what they show.
import { createShipmentMap, fitShipment, showAreas, showPlaces, showPosition, showTracks } from '/maps/map-view.js';
import { api, listAll, withQuery } from './api.js';
import { concernsShipment } from './feed.js';
import { describeEvent, el, formatEta, formatPosition, formatTime, statusBadge } from './format.js';
import { pager } from './pager.js';
import { refresher } from './refresh.js';

const PAGE_SIZE = 25;
/** The most points a track is drawn with: the API simplifies a longer one (Douglas-Peucker per device). */
const TRACK_MAX_POINTS = 2000;
const STATUSES = ['Planned', 'InTransit', 'Delivered', 'Completed', 'Cancelled'];
const EVENTS_SHOWN = 50;

export function shipmentListView({ account, feed, reportError }) {
  const base = `/v1/accounts/${account.id}`;
  const summary = el('p', { class: 'summary', id: 'shipment-count' });
  const body = el('tbody');
  const prev = el('button', { type: 'button', id: 'previous-page' }, 'Previous page');
  const next = el('button', { type: 'button', id: 'next-page' }, 'Next page');
  const filter = el('select', { id: 'status-filter' }, el('option', { value: '' }, 'All'), STATUSES.map((s) => el('option', { value: s }, s)));

  const element = el(
    'section',
    { class: 'card', id: 'shipments' },
    el('div', { class: 'heading' }, el('h1', {}, 'Shipments'), el('label', { for: 'status-filter' }, 'Status ', filter)),
    summary,
    el(
      'table',
      {},
      el('thead', {}, el('tr', {}, ['Shipment', 'Status', 'ETA', 'Last position', 'Open alerts'].map((h) => el('th', {}, h)))),
      body,
    ),
    el('div', { class: 'pager' }, prev, next),
  );

  async function refresh() {
    try {
      const page = await api('GET', withQuery(`${base}/shipments`, { limit: PAGE_SIZE, includeTotal: true, status: paging.status, cursor: paging.cursor }));
      const open = await Promise.all(
        page.items.map((s) =>
          api('GET', withQuery(`${base}/alerts`, { shipmentId: s.id, status: 'Open', limit: 1, includeTotal: true })).then((a) => a.metadata.total),
        ),
      );
      const first = paging.offset(PAGE_SIZE);
      summary.textContent =
        page.metadata.total === 0 ? 'No shipments.' : `Shipments ${first + 1}–${first + page.items.length} of ${page.metadata.total}`;
      body.replaceChildren(
        ...page.items.map((s, i) =>
          el(
            'tr',
            { dataset: { id: s.id } },
            el('td', {}, el('a', { href: `#/a/${account.id}/shipments/${s.id}` }, s.name), s.reference ? el('div', { class: 'muted' }, s.reference) : null),
            el('td', {}, statusBadge(s.status)),
            el('td', {}, formatEta(s.eta) || '—'),
            el('td', {}, s.lastPosition ? [formatPosition(s.lastPosition), el('div', { class: 'muted' }, formatTime(s.lastPosition.recordedAt))] : '—'),
            el('td', { class: open[i] > 0 ? 'alerts' : '' }, String(open[i])),
          ),
        ),
      );
      paging.loaded(page.metadata);
    } catch (error) {
      reportError(error);
    }
  }

  let timer;
  let unsubscribe = () => {};
  const paging = pager({ prev, next, filter, onChange: () => timer.wake() });
  function start() {
    timer = refresher(refresh);
    unsubscribe = feed.subscribe((events, { live }) => {
      if (live && events.some((e) => e.type.startsWith('shipment.') || e.type.startsWith('alert.'))) timer.wake();
    });
  }
  return { element, title: 'Shipments', start, stop: () => (timer?.stop(), unsubscribe()) };
}

export function shipmentView({ account, feed, reportError, canWrite }, shipmentId) {
  const base = `/v1/accounts/${account.id}`;
  const places = new Map();
  const $ = {
    name: el('h1', { id: 'shipment-name' }, 'Shipment'),
    status: el('span'),
    facts: el('dl', { id: 'shipment-facts' }),
    map: el('div', { id: 'map', 'aria-label': "Map of the shipment's track" }),
    alerts: el('tbody', { id: 'alerts' }),
    visits: el('ol', { id: 'visits' }),
    devices: el('tbody', { id: 'devices' }),
    events: el('ol', { id: 'events', class: 'events' }),
  };
  const element = el(
    'section',
    { id: 'shipment' },
    el('p', {}, el('a', { href: `#/a/${account.id}` }, '← Shipments')),
    el('div', { class: 'card' }, el('div', { class: 'heading' }, $.name, $.status), $.facts),
    el('div', { class: 'card map-card' }, $.map, el('p', { class: 'legend' }, legend())),
    el(
      'div',
      { class: 'columns' },
      el(
        'div',
        { class: 'card wide' },
        el('h2', {}, 'Alerts'),
        el('table', {}, el('thead', {}, el('tr', {}, ['Kind', 'Status', 'Started', 'Ended', 'Acknowledged', ''].map((h) => el('th', {}, h)))), $.alerts),
      ),
      el('div', { class: 'card' }, el('h2', {}, 'Events'), $.events),
      el('div', { class: 'card' }, el('h2', {}, 'Visits'), $.visits),
      el(
        'div',
        { class: 'card' },
        el('h2', {}, 'Devices'),
        el('table', {}, el('thead', {}, el('tr', {}, ['Serial number', 'Status', 'Last seen', 'Battery'].map((h) => el('th', {}, h)))), $.devices),
      ),
    ),
  );

  // Made in start(), once the view is in the document: MapLibre sizes its canvas from its container.
  let map;
  let mapReady;
  let framed = false;
  let shipment = null;
  const stats = { refreshes: 0, trackPoints: 0, trackTotalPoints: 0 };

  async function place(id) {
    if (!id) return null;
    if (!places.has(id)) places.set(id, api('GET', `${base}/points-of-interest/${id}`));
    return places.get(id);
  }

  async function refreshShipment() {
    shipment = await api('GET', `${base}/shipments/${shipmentId}`);
    const [origin, destination] = await Promise.all([place(shipment.originId), place(shipment.destinationId)]);
    $.name.textContent = shipment.name;
    $.status.replaceChildren(statusBadge(shipment.status));
    const facts = [
      ['Reference', shipment.reference],
      ['From', origin?.name],
      ['To', destination?.name],
      ['ETA', formatEta(shipment.eta) || 'Not available'],
      ['Last position', shipment.lastPosition ? `${formatPosition(shipment.lastPosition)} at ${formatTime(shipment.lastPosition.recordedAt)}` : 'None yet'],
      ['Planned departure', formatTime(shipment.plannedDepartureAt)],
      ['Planned arrival', formatTime(shipment.plannedArrivalAt)],
    ].filter(([, value]) => value);
    $.facts.replaceChildren(...facts.flatMap(([term, value]) => [el('dt', {}, term), el('dd', {}, value)]));
    return { origin, destination };
  }

  async function refreshMap({ origin, destination }, visits) {
    const [track] = await Promise.all([
      api('GET', withQuery(`${base}/shipments/${shipmentId}/track`, { maxPoints: TRACK_MAX_POINTS }), { accept: 'application/geo+json' }),
      mapReady,
    ]);
    stats.trackPoints = track.features.reduce((sum, f) => sum + f.geometry.coordinates.length, 0);
    const visited = await Promise.all([...new Set(visits.map((v) => v.poiId))].map((id) => place(id)));
    const circles = [
      origin && { kind: 'origin', location: origin.location, radiusMeters: origin.radiusMeters },
      destination && { kind: 'destination', location: destination.location, radiusMeters: destination.radiusMeters },
      ...visited.filter((p) => p && p.id !== origin?.id && p.id !== destination?.id).map((p) => ({ kind: 'visit', location: p.location, radiusMeters: p.radiusMeters })),
    ];
    showTracks(map, track);
    showAreas(map, circles);
    showPlaces(map, circles);
    showPosition(map, shipment.lastPosition);
    if (!framed) {
      const line = { type: 'LineString', coordinates: track.features.flatMap((f) => f.geometry.coordinates) };
      fitShipment(map, { line: line.coordinates.length ? line : null, places: circles, position: shipment.lastPosition });
      framed = true;
    }
  }

  async function refreshAlerts() {
    const alerts = (await listAll(`${base}/alerts`, 'items', { shipmentId })).reverse();
    $.alerts.replaceChildren(
      ...(alerts.length === 0
        ? [el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'No alerts.'))]
        : alerts.map((alert) =>
            el(
              'tr',
              { dataset: { id: alert.id } },
              el('td', {}, alert.kind),
              el('td', {}, statusBadge(alert.status)),
              el('td', {}, formatTime(alert.startedAt)),
              el('td', {}, formatTime(alert.endedAt)),
              el('td', {}, formatTime(alert.acknowledgedAt)),
              el('td', {}, canWrite && !alert.acknowledgedAt ? el('button', { type: 'button', class: 'acknowledge', onclick: () => acknowledge(alert.id) }, 'Acknowledge') : null),
            ),
          )),
    );
  }

  async function acknowledge(alertId) {
    try {
      await api('POST', `${base}/alerts/${alertId}/acknowledge`);
      await refreshAlerts();
    } catch (error) {
      reportError(error);
    }
  }

  async function refreshVisits() {
    const visits = await listAll(`${base}/shipments/${shipmentId}/visits`, 'items');
    const named = await Promise.all(visits.map(async (visit) => ({ visit, place: await place(visit.poiId) })));
    $.visits.replaceChildren(
      ...(named.length === 0
        ? [el('li', { class: 'muted' }, 'No visits yet.')]
        : named.map(({ visit, place: p }) =>
            el('li', {}, `${p?.name ?? visit.poiId}: arrived ${formatTime(visit.arrivedAt)}${visit.departedAt ? `, left ${formatTime(visit.departedAt)}` : ''}`),
          )),
    );
    return visits;
  }

  async function refreshDevices() {
    const devices = await listAll(`${base}/shipments/${shipmentId}/devices`, 'devices');
    $.devices.replaceChildren(
      ...(devices.length === 0
        ? [el('tr', {}, el('td', { colspan: 4, class: 'muted' }, 'No devices assigned.'))]
        : devices.map((d) =>
            el('tr', {}, el('td', {}, d.serialNumber), el('td', {}, d.status), el('td', {}, formatTime(d.lastSeenAt)), el('td', {}, d.batteryLevel === null ? '' : `${d.batteryLevel} %`)),
          )),
    );
  }

  function showEvents() {
    const mine = feed.events.filter((event) => concernsShipment(event, shipmentId)).slice(-EVENTS_SHOWN).reverse();
    $.events.replaceChildren(
      ...(mine.length === 0
        ? [el('li', { class: 'muted' }, feed.live ? 'No events yet.' : 'Reading the event feed…')]
        : mine.map((event) =>
            el('li', { dataset: { id: event.id, type: event.type } }, el('time', {}, formatTime(event.occurredAt)), ' ', el('strong', {}, event.type), ' ', describeEvent(event)),
          )),
    );
  }

  let timer;
  let unsubscribe = () => {};
  function start() {
    map = createShipmentMap($.map);
    window.trackingConsole.map = map;
    mapReady = new Promise((resolve) => (map.loaded() ? resolve() : map.once('load', resolve)));
    timer = refresher(async () => {
      try {
        const [where, visits] = await Promise.all([refreshShipment(), refreshVisits(), refreshAlerts(), refreshDevices()]);
        await refreshMap(where, visits);
        stats.refreshes += 1;
      } catch (error) {
        reportError(error);
      }
    });
    showEvents();
    unsubscribe = feed.subscribe((events, { live }) => {
      showEvents();
      if (live && events.some((event) => concernsShipment(event, shipmentId))) timer.wake();
    });
  }
  return {
    element,
    title: 'Shipment',
    stats,
    start,
    stop: () => {
      timer?.stop();
      unsubscribe();
      map?.remove();
    },
  };
}

function legend() {
  return [
    el('span', { class: 'key track' }, 'Track'),
    el('span', { class: 'key origin' }, 'Origin'),
    el('span', { class: 'key destination' }, 'Destination'),
    el('span', { class: 'key visit' }, 'Visited place'),
    el('span', { class: 'key position' }, 'Last position'),
  ];
}
