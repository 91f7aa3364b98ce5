#!/usr/bin/env node
// Part of `npm run lint`: fails when a package in package-lock.json declares a Node version range that
// excludes the oldest Node the project supports (the root package.json's `engines.node`). npm only warns
// (EBADENGINE) at install; this makes such an upgrade fail before it lands. Usage:
//   node scripts/check-engines.mjs [path/to/package-lock.json]
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const lockFile = process.argv[2] ?? join(root, 'package-lock.json');
const lock = JSON.parse(readFileSync(lockFile, 'utf8'));

const supported = manifest.engines?.node;
const oldest = supported && semver.minVersion(supported);
if (!oldest) {
  console.error('package.json declares no engines.node: state the Node version the project supports.');
  process.exit(1);
}

const refusing = [];
for (const [path, entry] of Object.entries(lock.packages ?? {})) {
  const range = entry.engines?.node;
  if (path === '' || typeof range !== 'string') continue;
  // A range npm cannot parse is one it ignores too; only a readable range that refuses counts.
  if (semver.validRange(range) && !semver.satisfies(oldest, range)) {
    refusing.push(`  ${path.replace(/^.*node_modules\//, '')}@${entry.version} wants node ${range} (${path})`);
  }
}

if (refusing.length > 0) {
  console.error(`${refusing.length} package(s) in ${lockFile} refuse Node ${oldest}, the oldest the project supports (engines.node "${supported}"):`);
  console.error(refusing.join('\n'));
  console.error('Pin a version that supports it (package.json, or "overrides" for a dependency of a dependency), or raise engines.node.');
  process.exit(1);
}
console.log(`check-engines: every package in the lock file accepts Node ${oldest}.`);
