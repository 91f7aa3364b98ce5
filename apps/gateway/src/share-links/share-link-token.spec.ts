import { createHash } from 'node:crypto';
import { ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { newShareToken, shareTokenDigest } from './share-link-token.js';
import { expiryOf } from './share-links.controller.js';

describe('share link tokens', () => {
  it('are 22 base64url characters of 128 random bits, each new, and stored as the SHA-256 of their text', () => {
    const tokens = Array.from({ length: 1000 }, () => newShareToken());
    for (const { token, digest } of tokens) {
      expect(token).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(Buffer.from(token, 'base64url')).toHaveLength(16);
      expect(digest).toBe(createHash('sha256').update(token).digest('hex'));
      expect(shareTokenDigest(token)).toBe(digest);
    }
    expect(new Set(tokens.map(({ token }) => token)).size).toBe(1000);
  });

  it('refuses anything that cannot be a token without hashing it', () => {
    for (const candidate of ['', 'short', 'A'.repeat(21), 'A'.repeat(23), `${'A'.repeat(21)}=`, `${'A'.repeat(21)}+`, `${'A'.repeat(21)}/`, "' OR 1=1 -- aaaaaaaaaa"]) {
      expect(shareTokenDigest(candidate), candidate).toBeUndefined();
    }
  });
});

describe('expiryOf', () => {
  const now = Date.parse('2026-11-27T10:00:00.000Z');
  const day = 24 * 3600 * 1000;
  const issueOf = (expiresAt: string): unknown => {
    try {
      expiryOf(expiresAt, now);
    } catch (error) {
      return error instanceof DomainError ? error.details : error;
    }
    return 'accepted';
  };

  it('defaults to 7 days and takes an instant in (now, now + 30 days], with a minute for a clock ahead of ours', () => {
    expect(expiryOf(undefined, now)).toBe(now + 7 * day);
    expect(expiryOf('2026-11-27T10:00:00.001Z', now)).toBe(now + 1);
    expect(expiryOf('2026-12-27T10:00:00.000Z', now)).toBe(now + 30 * day);
    expect(expiryOf('2026-12-27T10:01:00.000Z', now)).toBe(now + 30 * day + 60_000);
  });

  it('refuses now, the past and beyond 30 days as OutOfRange', () => {
    for (const expiresAt of ['2026-11-27T10:00:00.000Z', '2026-11-26T10:00:00Z', '2026-12-27T10:01:00.001Z', '9999-12-31T23:59:59Z']) {
      expect(issueOf(expiresAt), expiresAt).toEqual({ field: 'expiresAt', issue: ParameterIssue.OutOfRange });
    }
  });
});
