#!/usr/bin/env node
// Builds the gateway's web files into apps/gateway/dist/web/ (run by `npm run build` after tsc):
// - the page sources of apps/gateway/web/ as they are (plain ES modules and CSS, no bundler): the tracking
//   page and, under console/, the console (GET /console);
// - MapLibre GL's CSP build (script, worker, stylesheet) from the installed maplibre-gl;
// - basemap.json: Natural Earth 1:50m land polygons and country borders from world-atlas (TopoJSON),
//   converted to one GeoJSON FeatureCollection with topojson-client, coordinates rounded to 4 decimals
//   (about 11 m, below what 1:50m shows);
// - a gzip copy of every script, stylesheet and JSON file, which @fastify/static sends to clients that accept it.
// 1:50m keeps the basemap small enough for a phone (1.5 MB, 0.5 MB gzipped; 1:10m would be 9 MB): the
// track, drawn from the readings, carries the detail of a city-level view.
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { feature, mesh } from 'topojson-client';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'apps/gateway/dist/web');
const require = createRequire(import.meta.url);

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'maplibre'), { recursive: true });

// Directories too: the console's modules live in web/console/.
for (const file of readdirSync(join(root, 'apps/gateway/web'))) cpSync(join(root, 'apps/gateway/web', file), join(out, file), { recursive: true });

const maplibre = dirname(require.resolve('maplibre-gl/package.json'));
for (const file of ['maplibre-gl-csp.js', 'maplibre-gl-csp-worker.js', 'maplibre-gl.css', 'LICENSE.txt']) {
  cpSync(join(maplibre, 'dist', file), join(out, 'maplibre', file));
}

const atlas = dirname(require.resolve('world-atlas/package.json'));
const land = JSON.parse(readFileSync(join(atlas, 'land-50m.json'), 'utf8'));
const countries = JSON.parse(readFileSync(join(atlas, 'countries-50m.json'), 'utf8'));
const landFeatures = feature(land, land.objects.land).features.map((f) => ({ type: 'Feature', properties: { kind: 'land' }, geometry: f.geometry }));
// Borders between two countries only (a coastline is the land's edge already), each drawn once.
const borders = mesh(countries, countries.objects.countries, (a, b) => a !== b);
const basemap = {
  type: 'FeatureCollection',
  features: [...landFeatures, { type: 'Feature', properties: { kind: 'border' }, geometry: borders }],
};
const json = JSON.stringify(basemap, (_key, value) => (typeof value === 'number' ? Math.round(value * 1e4) / 1e4 : value));
writeFileSync(join(out, 'basemap.json'), json);
cpSync(join(atlas, 'LICENSE'), join(out, 'basemap-LICENSE.txt'));

for (const file of readdirSync(out, { recursive: true })) {
  if (/\.(js|css|json)$/.test(file)) writeFileSync(join(out, `${file}.gz`), gzipSync(readFileSync(join(out, file)), { level: 9 }));
}
