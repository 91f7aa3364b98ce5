// The consignee's tracking page (GET /track/{token}): reads the public view of its share link, draws it,
// and reads it again every 30 s while open. An unknown, expired or revoked link shows a page that says so.
import { createShipmentMap, fitShipment, showPlaces, showPosition, showTrack } from './map-view.js';

const REFRESH_MS = 30_000;
const token = decodeURIComponent(location.pathname.split('/').pop() ?? '');
const $ = (id) => document.getElementById(id);

let map;
let framed = false;
let timer;
// For tests and curious people: the map and the last view.
window.trackingPage = { map: undefined, view: undefined, refreshes: 0 };

const STATUS = { Planned: 'Planned', InTransit: 'On its way', Delivered: 'Delivered', Completed: 'Delivered', Cancelled: 'Cancelled' };
const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const formatTime = (iso) => when.format(new Date(iso));

async function refresh() {
  clearTimeout(timer);
  let delay = REFRESH_MS;
  try {
    const response = await fetch(`/v1/public/tracking/${encodeURIComponent(token)}`, { cache: 'no-store', credentials: 'omit' });
    if (response.status === 404) return gone();
    if (response.status === 429) delay = Math.max(1, Number(response.headers.get('Retry-After')) || 30) * 1000;
    else if (response.ok) render(await response.json());
  } catch {
    // Offline for a moment: the next round tries again.
  }
  timer = setTimeout(refresh, delay);
}

function gone() {
  $('loading').hidden = true;
  $('summary').hidden = true;
  $('map').hidden = true;
  $('gone').hidden = false;
  document.title = 'Link expired or unknown';
}

function render(view) {
  window.trackingPage.view = view;
  window.trackingPage.refreshes += 1;
  $('loading').hidden = true;
  $('summary').hidden = false;
  $('name').textContent = view.name;
  document.title = `${view.name}: ${STATUS[view.status] ?? view.status}`;
  $('status').textContent = STATUS[view.status] ?? view.status;
  $('status').dataset.status = view.status;
  $('eta').textContent = etaText(view);
  $('origin').textContent = view.origin ? view.origin.name : 'Not given';
  $('destination').textContent = view.destination ? view.destination.name : 'Not given';
  $('position').textContent = view.lastPosition
    ? `${view.lastPosition.lat.toFixed(4)}, ${view.lastPosition.lng.toFixed(4)} at ${formatTime(view.lastPosition.recordedAt)}`
    : 'None yet';
  $('updated').textContent = formatTime(view.updatedAt);
  $('stops').hidden = view.visits.length === 0;
  $('visits').replaceChildren(
    ...view.visits.map((visit) => {
      const item = document.createElement('li');
      item.textContent = `${visit.name}: arrived ${formatTime(visit.arrivedAt)}${visit.departedAt ? `, left ${formatTime(visit.departedAt)}` : ''}`;
      return item;
    }),
  );
  drawMap(view);
}

function etaText(view) {
  if (view.status === 'Delivered' || view.status === 'Completed') return 'Delivered';
  const eta = view.eta;
  if (!eta || !eta.arrivalAt) return 'Not available';
  const range = eta.earliestAt && eta.latestAt && eta.earliestAt !== eta.latestAt ? ` (between ${formatTime(eta.earliestAt)} and ${formatTime(eta.latestAt)})` : '';
  return `${formatTime(eta.arrivalAt)}${range}`;
}

function drawMap(view) {
  if (!map) {
    map = createShipmentMap($('map'));
    window.trackingPage.map = map;
  }
  const places = [
    view.origin && { kind: 'origin', location: view.origin.location },
    view.destination && { kind: 'destination', location: view.destination.location },
  ];
  const draw = () => {
    showTrack(map, view.track);
    showPlaces(map, places);
    showPosition(map, view.lastPosition);
    // Framed once: a person who zoomed or panned keeps their view across refreshes.
    if (!framed) fitShipment(map, { line: view.track, places, position: view.lastPosition });
    framed = true;
  };
  if (map.isStyleLoaded()) draw();
  else map.once('load', draw);
}

// Back from the background (a phone's tab switch): read at once rather than wait for the timer.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && $('gone').hidden) refresh();
});

refresh();
