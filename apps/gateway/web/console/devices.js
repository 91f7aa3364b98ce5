// The devices of an account, a page at a time, in a table and on a map of their last locations; the map
// clusters devices that lie close together (a MapLibre clustered GeoJSON source), so a page of a hundred
// trackers in one depot is one circle until zoomed in. Read again every REFRESH_MS and on device events.
import { COLORS, createShipmentMap } from '/maps/map-view.js';
import { api, withQuery } from './api.js';
import { el, formatPosition, formatTime, statusBadge } from './format.js';
import { pager } from './pager.js';
import { refresher } from './refresh.js';

const PAGE_SIZE = 100;
const STATUSES = ['Available', 'Assigned', 'Retired'];

export function devicesView({ account, feed, reportError }) {
  const base = `/v1/accounts/${account.id}`;
  const body = el('tbody', { id: 'device-rows' });
  const summary = el('p', { class: 'summary', id: 'device-count' });
  const prev = el('button', { type: 'button' }, 'Previous page');
  const next = el('button', { type: 'button' }, 'Next page');
  const filter = el('select', { id: 'device-status-filter' }, el('option', { value: '' }, 'All'), STATUSES.map((s) => el('option', { value: s }, s)));
  const mapElement = el('div', { id: 'map', class: 'devices-map', 'aria-label': 'Map of the devices’ last locations' });
  const element = el(
    'section',
    { id: 'devices-page' },
    el(
      'div',
      { class: 'card' },
      el('div', { class: 'heading' }, el('h1', {}, 'Devices'), el('label', { for: 'device-status-filter' }, 'Status ', filter)),
      summary,
      el(
        'table',
        {},
        el('thead', {}, el('tr', {}, ['Serial number', 'Model', 'Status', 'Shipment', 'Last seen', 'Last location', 'Battery'].map((h) => el('th', {}, h)))),
        body,
      ),
      el('div', { class: 'pager' }, prev, next),
    ),
    el('div', { class: 'card map-card' }, mapElement),
  );

  let map;
  let mapReady;

  async function refresh() {
    try {
      const page = await api('GET', withQuery(`${base}/devices`, { limit: PAGE_SIZE, includeTotal: true, status: paging.status, cursor: paging.cursor }));
      const first = paging.offset(PAGE_SIZE);
      summary.textContent = page.metadata.total === 0 ? 'No devices.' : `Devices ${first + 1}–${first + page.devices.length} of ${page.metadata.total}`;
      body.replaceChildren(
        ...page.devices.map((d) =>
          el(
            'tr',
            { dataset: { id: d.id } },
            el('td', {}, d.serialNumber),
            el('td', {}, d.model),
            el('td', {}, statusBadge(d.status)),
            el('td', {}, d.shipmentId ? el('a', { href: `#/a/${account.id}/shipments/${d.shipmentId}` }, 'Open') : '—'),
            el('td', {}, formatTime(d.lastSeenAt) || '—'),
            el('td', {}, formatPosition(d.lastLocation) || '—'),
            el('td', {}, d.batteryLevel === null ? '—' : `${d.batteryLevel} %`),
          ),
        ),
      );
      paging.loaded(page.metadata);
      await mapReady;
      const located = page.devices.filter((d) => d.lastLocation);
      map.getSource('devices').setData({
        type: 'FeatureCollection',
        features: located.map((d) => ({ type: 'Feature', properties: { id: d.id }, geometry: { type: 'Point', coordinates: [d.lastLocation.lng, d.lastLocation.lat] } })),
      });
      if (located.length > 0 && !map.framed) {
        const bounds = located.reduce((b, d) => b.extend([d.lastLocation.lng, d.lastLocation.lat]), new maplibregl.LngLatBounds());
        map.fitBounds(bounds, { padding: 48, maxZoom: 12, animate: false });
        map.framed = true;
      }
    } catch (error) {
      reportError(error);
    }
  }

  let timer;
  let unsubscribe = () => {};
  const paging = pager({ prev, next, filter, onChange: () => timer.wake() });

  function start() {
    map = createShipmentMap(mapElement);
    window.trackingConsole.map = map;
    mapReady = new Promise((resolve) => {
      map.once('load', () => {
        map.addSource('devices', { type: 'geojson', data: { type: 'FeatureCollection', features: [] }, cluster: true, clusterRadius: 40 });
        // No labels (they would need fonts from somewhere): a cluster's size says how many it holds.
        map.addLayer({
          id: 'device-clusters',
          type: 'circle',
          source: 'devices',
          filter: ['has', 'point_count'],
          paint: {
            'circle-color': COLORS.track,
            'circle-opacity': 0.6,
            'circle-radius': ['step', ['get', 'point_count'], 12, 10, 18, 50, 26],
            'circle-stroke-color': '#ffffff',
            'circle-stroke-width': 2,
          },
        });
        map.addLayer({
          id: 'device-points',
          type: 'circle',
          source: 'devices',
          filter: ['!', ['has', 'point_count']],
          paint: { 'circle-color': COLORS.position, 'circle-radius': 6, 'circle-stroke-color': '#ffffff', 'circle-stroke-width': 2 },
        });
        resolve();
      });
    });
    timer = refresher(refresh);
    unsubscribe = feed.subscribe((events, { live }) => {
      if (live && events.some((e) => e.type.startsWith('device.'))) timer.wake();
    });
  }

  return {
    element,
    title: 'Devices',
    start,
    stop: () => {
      timer?.stop();
      unsubscribe();
      map?.remove();
    },
  };
}
