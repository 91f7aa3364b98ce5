import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EVENT_TYPES, EventType } from '@tracking/contracts';
import { describe, expect, it } from 'vitest';

/**
 * Docs against the code they describe, without a stack: each test would have caught a drift a newcomer
 * met (issue 32): routes described as "not served" long after they were, and an event table that missed
 * the visit events.
 */

/** Files under `dir` (recursively) whose names end with one of `suffixes`, skipping build output and dependencies. */
async function filesUnder(dir: string, suffixes: string[]): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && suffixes.some((suffix) => entry.name.endsWith(suffix)))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => !/(^|\/)(node_modules|dist|generated)\//.test(path));
}

/** The backticked event types of the table under "| change (route) | service | events |" in docs/events.md. */
function eventTable(markdown: string): string[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => /^\| change \(route\) \| service \| events \|$/.test(line));
  expect(start, 'the event table of docs/events.md').toBeGreaterThanOrEqual(0);
  const rows = [];
  for (let i = start + 2; i < lines.length && lines[i]!.startsWith('|'); i++) rows.push(lines[i]!);
  const named = rows.flatMap((row) => [...(row.split('|')[3] ?? '').matchAll(/`([a-z]+\.[a-z_]+)`/g)].map((match) => match[1]!));
  return [...new Set(named)].sort();
}

describe('docs against the code', () => {
  it('name no route or SDK namespace as not served (or served later): the gateway serves what it documents', async () => {
    const files = [
      'README.md',
      ...(await filesUnder('docs', ['.md'])),
      ...(await filesUnder('libs', ['README.md'])),
      ...(await filesUnder('libs/sdk/src', ['.ts'])),
      ...(await filesUnder('apps/gateway/src', ['.ts'])),
    ];
    expect(files.length).toBeGreaterThan(30);
    const NOT_SERVED = /\bnot (?:yet )?served\b|\bserved (?:by the gateway )?yet\b|\bonce (?:their|its|the) routes? (?:is |are )?served\b|\bnot (?:yet )?implemented\b|\bcoming soon\b/i;
    const found: string[] = [];
    for (const file of files) {
      const lines = (await readFile(file, 'utf8')).split('\n');
      lines.forEach((line, index) => {
        if (NOT_SERVED.test(line)) found.push(`${file}:${index + 1}: ${line.trim()}`);
      });
    }
    expect(found).toEqual([]);
  });

  it("list every event type in docs/events.md's table, and only those: each one the code emits", async () => {
    const documented = eventTable(await readFile('docs/events.md', 'utf8'));
    expect(documented).toEqual([...EVENT_TYPES].sort());
    // Emitted: named as `EventType.<Member>` in the services' code (specs aside), so no type of the enum is dead.
    const members = new Map(Object.entries(EventType));
    const emitted = new Set<string>();
    for (const file of await filesUnder('apps', ['.ts'])) {
      if (file.endsWith('.spec.ts')) continue;
      for (const match of (await readFile(file, 'utf8')).matchAll(/\bEventType\.(\w+)\b/g)) {
        const type = members.get(match[1]!);
        if (type !== undefined) emitted.add(type);
      }
    }
    expect([...emitted].sort()).toEqual([...EVENT_TYPES].sort());
  });
});
