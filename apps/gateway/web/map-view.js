// A map of one shipment drawn with MapLibre GL (loaded before this module as the global `maplibregl`,
// from /maps/maplibre/maplibre-gl-csp.js) over the basemap the gateway ships: no tiles, no fonts, nothing
// from outside. Reusable by any page of the gateway: createShipmentMap, then showTrack (or showTracks),
// showPlaces, showAreas, showPosition as data arrives, and fitShipment once.

const MAPS = '/maps/';
const EMPTY = { type: 'FeatureCollection', features: [] };

export const COLORS = {
  water: '#dbe7f3',
  land: '#f6f4ee',
  border: '#c9c3b6',
  track: '#1d4ed8',
  origin: '#15803d',
  destination: '#b91c1c',
  visit: '#a16207',
  position: '#1d4ed8',
};

// No symbol layers and so no `glyphs`: labels would need fonts from somewhere, and the page says in text
// what the map shows.
function style() {
  return {
    version: 8,
    sources: {
      basemap: { type: 'geojson', data: `${MAPS}basemap.json`, attribution: 'Natural Earth' },
      areas: { type: 'geojson', data: EMPTY },
      track: { type: 'geojson', data: EMPTY },
      places: { type: 'geojson', data: EMPTY },
      position: { type: 'geojson', data: EMPTY },
    },
    layers: [
      { id: 'water', type: 'background', paint: { 'background-color': COLORS.water } },
      { id: 'land', type: 'fill', source: 'basemap', filter: ['==', ['get', 'kind'], 'land'], paint: { 'fill-color': COLORS.land } },
      {
        id: 'borders',
        type: 'line',
        source: 'basemap',
        filter: ['==', ['get', 'kind'], 'border'],
        paint: { 'line-color': COLORS.border, 'line-width': 1 },
      },
      {
        id: 'areas',
        type: 'fill',
        source: 'areas',
        paint: { 'fill-color': ['match', ['get', 'kind'], 'origin', COLORS.origin, 'destination', COLORS.destination, COLORS.visit], 'fill-opacity': 0.15 },
      },
      {
        id: 'areas-outline',
        type: 'line',
        source: 'areas',
        paint: { 'line-color': ['match', ['get', 'kind'], 'origin', COLORS.origin, 'destination', COLORS.destination, COLORS.visit], 'line-width': 1.5 },
      },
      {
        id: 'track',
        type: 'line',
        source: 'track',
        layout: { 'line-join': 'round', 'line-cap': 'round' },
        paint: { 'line-color': COLORS.track, 'line-width': ['interpolate', ['linear'], ['zoom'], 4, 2, 14, 5], 'line-opacity': 0.85 },
      },
      {
        id: 'places',
        type: 'circle',
        source: 'places',
        paint: {
          'circle-radius': 8,
          'circle-color': ['match', ['get', 'kind'], 'origin', COLORS.origin, 'destination', COLORS.destination, COLORS.visit],
          'circle-stroke-color': '#ffffff',
          'circle-stroke-width': 2,
        },
      },
      {
        id: 'position',
        type: 'circle',
        source: 'position',
        paint: { 'circle-radius': 9, 'circle-color': COLORS.position, 'circle-stroke-color': '#ffffff', 'circle-stroke-width': 3 },
      },
    ],
  };
}

/** A map in `container`, its worker served by the gateway (the CSP allows no `blob:` worker). */
export function createShipmentMap(container) {
  maplibregl.setWorkerUrl(`${MAPS}maplibre/maplibre-gl-csp-worker.js`);
  const map = new maplibregl.Map({
    container,
    style: style(),
    center: [10, 30],
    zoom: 1,
    maxZoom: 17,
    attributionControl: { compact: true },
    cooperativeGestures: false,
  });
  map.addControl(new maplibregl.NavigationControl({ showCompass: false }), 'top-right');
  return map;
}

/** A GeoJSON LineString (or null) as the track. */
export function showTrack(map, line) {
  map.getSource('track').setData(line ? { type: 'Feature', properties: {}, geometry: line } : EMPTY);
}

/** Tracks as a GeoJSON FeatureCollection (one LineString per device, as `GET .../track` answers `application/geo+json`). */
export function showTracks(map, collection) {
  map.getSource('track').setData(collection ?? EMPTY);
}

/**
 * Geofence circles as `{kind: 'origin' | 'destination' | 'visit', location: {lat, lng}, radiusMeters}`, drawn
 * to scale (a 64-sided polygon); null entries are skipped.
 */
export function showAreas(map, areas) {
  const features = areas
    .filter((area) => area && area.location && area.radiusMeters > 0)
    .map((area) => ({ type: 'Feature', properties: { kind: area.kind }, geometry: circle(area.location, area.radiusMeters) }));
  map.getSource('areas').setData({ type: 'FeatureCollection', features });
}

/** Places as `{kind: 'origin' | 'destination' | 'visit', location: {lat, lng}}`; null entries are skipped. */
export function showPlaces(map, places) {
  const features = places
    .filter((place) => place && place.location)
    .map((place) => ({ type: 'Feature', properties: { kind: place.kind }, geometry: point(place.location) }));
  map.getSource('places').setData({ type: 'FeatureCollection', features });
}

/** The current position `{lat, lng}` (or null). */
export function showPosition(map, position) {
  map.getSource('position').setData(position ? { type: 'Feature', properties: {}, geometry: point(position) } : EMPTY);
}

/** Frames the track, places and position; a single point gets a city-level zoom. */
export function fitShipment(map, { line, places = [], position = null }) {
  const coordinates = [...(line ? line.coordinates : []), ...places.filter((p) => p && p.location).map((p) => lngLat(p.location))];
  if (position) coordinates.push(lngLat(position));
  if (coordinates.length === 0) return;
  const bounds = coordinates.reduce((b, c) => b.extend(c), new maplibregl.LngLatBounds(coordinates[0], coordinates[0]));
  map.fitBounds(bounds, { padding: 48, maxZoom: 13, animate: false });
}

function lngLat(location) {
  return [location.lng, location.lat];
}

const EARTH_RADIUS_METERS = 6371008.8;

/**
 * A circle of `radiusMeters` around `center` as a polygon: each vertex at that great-circle distance.
 * Written here rather than taken from @turf/circle: the pages load plain modules without a bundler, and
 * turf's circle would bring its own module graph (helpers, destination, invariant) for these ten lines.
 */
function circle(center, radiusMeters, sides = 64) {
  const lat = (center.lat * Math.PI) / 180;
  const lng = (center.lng * Math.PI) / 180;
  const angular = radiusMeters / EARTH_RADIUS_METERS;
  const ring = [];
  for (let i = 0; i <= sides; i++) {
    const bearing = (2 * Math.PI * (i % sides)) / sides;
    const lat2 = Math.asin(Math.sin(lat) * Math.cos(angular) + Math.cos(lat) * Math.sin(angular) * Math.cos(bearing));
    const lng2 = lng + Math.atan2(Math.sin(bearing) * Math.sin(angular) * Math.cos(lat), Math.cos(angular) - Math.sin(lat) * Math.sin(lat2));
    ring.push([(lng2 * 180) / Math.PI, (lat2 * 180) / Math.PI]);
  }
  return { type: 'Polygon', coordinates: [ring] };
}

function point(location) {
  return { type: 'Point', coordinates: lngLat(location) };
}
