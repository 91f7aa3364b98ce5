import { describe, expect, it } from 'vitest';
import { jsonPageBytes } from './keyset-json.js';

describe('jsonPageBytes', () => {
  it('writes the page the joined string would be, byte for byte', () => {
    const items = ['{"id":"a","name":"Ünïcode ✓ 🚚"}', '{"id":"b","tags":[]}', '{}'];
    const metadata = { nextCursor: 'MTA.abc', total: 3 };
    const expected = `{"items":[${items.join(',')}],"metadata":${JSON.stringify(metadata)}}`;
    expect(jsonPageBytes('items', items, metadata)).toEqual(Buffer.from(expected));
  });

  it('writes an empty page under its key', () => {
    expect(jsonPageBytes('devices', [], { nextCursor: null }).toString()).toBe('{"devices":[],"metadata":{"nextCursor":null}}');
  });
});
