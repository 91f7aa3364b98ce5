import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { CursorCodec, cursorBinding } from './cursor-codec.js';

const codec = new CursorCodec('a-secret-of-sufficient-length');
const binding = cursorBinding('shipments', { accountId: '0190a4a0-0000-7000-8000-000000000001' });

function expectInvalidCursor(decode: () => unknown): void {
  let thrown: unknown;
  try {
    decode();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(DomainError);
  expect((thrown as DomainError).code).toBe(ErrorCode.InvalidParameter);
  expect((thrown as DomainError).details).toEqual({ field: 'cursor', issue: ParameterIssue.InvalidCursor });
}

describe('CursorCodec', () => {
  it.each(['0', '1', '42', '9007199254740993', '9223372036854775807'])('round-trips the position %s', (position) => {
    const cursor = codec.encode(binding, position);
    expect(codec.decode(binding, cursor)).toBe(position);
  });

  it('makes an opaque cursor of URL-safe characters only', () => {
    const cursor = codec.encode(binding, '12345');
    expect(cursor).toMatch(/^[A-Za-z0-9_.-]+$/);
    expect(cursor).not.toContain('12345');
    expect(encodeURIComponent(cursor)).toBe(cursor);
  });

  it('is deterministic for one binding and position, and differs by position', () => {
    expect(codec.encode(binding, '7')).toBe(codec.encode(binding, '7'));
    expect(codec.encode(binding, '7')).not.toBe(codec.encode(binding, '8'));
  });

  it('rejects a cursor whose position was changed', () => {
    const [, mac] = codec.encode(binding, '100').split('.');
    const forged = `${Buffer.from('1').toString('base64url')}.${mac}`;
    expectInvalidCursor(() => codec.decode(binding, forged));
  });

  it('rejects a cursor whose MAC was changed', () => {
    const [position, mac] = codec.encode(binding, '100').split('.') as [string, string];
    const bytes = Buffer.from(mac, 'base64url');
    bytes[0]! ^= 0x01;
    expectInvalidCursor(() => codec.decode(binding, `${position}.${bytes.toString('base64url')}`));
    expectInvalidCursor(() => codec.decode(binding, `${position}.${mac.slice(0, -2)}`));
    expectInvalidCursor(() => codec.decode(binding, `${position}.${mac}${mac}`));
  });

  it('rejects every single-character change of a cursor', () => {
    const cursor = codec.encode(binding, '123456');
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!=+/ ';
    for (let index = 0; index < cursor.length; index++) {
      for (const replacement of alphabet) {
        if (replacement === cursor[index]) continue;
        const tampered = cursor.slice(0, index) + replacement + cursor.slice(index + 1);
        expectInvalidCursor(() => codec.decode(binding, tampered));
      }
    }
  });

  it('rejects characters inserted into a cursor', () => {
    const cursor = codec.encode(binding, '123456');
    for (const inserted of ['!', '=', ' ', '\n', '%']) {
      expectInvalidCursor(() => codec.decode(binding, inserted + cursor));
      expectInvalidCursor(() => codec.decode(binding, cursor + inserted));
      expectInvalidCursor(() => codec.decode(binding, cursor.replace('.', `${inserted}.`)));
    }
  });

  it('rejects a cursor made for another collection, scope or filter', () => {
    const cursor = codec.encode(binding, '100');
    const others = [
      cursorBinding('sets', { accountId: '0190a4a0-0000-7000-8000-000000000001' }),
      cursorBinding('shipments', { accountId: '0190a4a0-0000-7000-8000-000000000002' }),
      cursorBinding('shipments', { accountId: '0190a4a0-0000-7000-8000-000000000001', status: 'Planned' }),
      cursorBinding('shipments', {}),
    ];
    for (const other of others) expectInvalidCursor(() => codec.decode(other, cursor));
  });

  it('rejects a cursor made with another secret', () => {
    const cursor = new CursorCodec('another-secret-of-sufficient-length').encode(binding, '100');
    expectInvalidCursor(() => codec.decode(binding, cursor));
  });

  it('rejects a correctly signed position that is not a sequence number', () => {
    for (const position of ['', 'abc', '-1', '-0', '1.5', '1e3', ' 1', '1 ', '+1', '01', '0x10', '12345678901234567890']) {
      expectInvalidCursor(() => codec.decode(binding, codec.encode(binding, position)));
    }
  });

  it.each(['9223372036854775808', '9999999999999999999', '18446744073709551615'])(
    'rejects a correctly signed position beyond 2^63-1, the largest bigint (%s)',
    (position) => {
      expectInvalidCursor(() => codec.decode(binding, codec.encode(binding, position)));
    },
  );

  it.each([
    ['empty', ''],
    ['without a dot', 'MTIz'],
    ['only a dot', '.'],
    ['without a position', '.abc'],
    ['without a MAC', 'MTIz.'],
    ['with three parts', 'MTIz.abc.def'],
    ['random text', 'definitely not a cursor'],
    ['JSON', '{"seq":1}'],
  ])('rejects a malformed cursor: %s', (_case, cursor) => {
    expectInvalidCursor(() => codec.decode(binding, cursor));
  });
});

describe('cursorBinding', () => {
  it('does not depend on the order of the scope keys', () => {
    expect(cursorBinding('shipments', { a: '1', b: '2' })).toBe(cursorBinding('shipments', { b: '2', a: '1' }));
  });

  it('ignores undefined filters but not null ones', () => {
    expect(cursorBinding('shipments', { a: '1', b: undefined })).toBe(cursorBinding('shipments', { a: '1' }));
    expect(cursorBinding('shipments', { a: '1', b: null })).not.toBe(cursorBinding('shipments', { a: '1' }));
  });

  it('cannot be confused by values that look like separators', () => {
    expect(cursorBinding('shipments', { a: '1","b":"2' })).not.toBe(cursorBinding('shipments', { a: '1', b: '2' }));
    expect(cursorBinding('shipments', { a: 1 })).not.toBe(cursorBinding('shipments', { a: '1' }));
  });
});
