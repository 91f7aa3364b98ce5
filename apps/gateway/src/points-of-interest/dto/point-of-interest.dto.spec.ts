import 'reflect-metadata';
import type { ArgumentMetadata } from '@nestjs/common';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { createValidationPipe } from '../../http/validation.js';
import { CreatePointOfInterestDto, UpdatePointOfInterestDto } from './point-of-interest.dto.js';

const pipe = createValidationPipe();
const bodyOf = (metatype: new () => object): ArgumentMetadata => ({ type: 'body', metatype, data: undefined });
const valid = { name: 'Dock', kind: 'Port', location: { lat: 1, lng: 2 } };

async function detailsOf(value: unknown, metatype: new () => object = CreatePointOfInterestDto): Promise<unknown> {
  try {
    await pipe.transform(value, bodyOf(metatype));
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe(ErrorCode.InvalidParameter);
    return (error as DomainError).details;
  }
  return undefined;
}

// JSON cannot carry these; the rules refuse them anyway, should a body ever reach the pipe another way.
describe('point of interest bodies with non-finite numbers', () => {
  it.each([
    ['lat NaN', { location: { lat: Number.NaN, lng: 0 } }, 'location.lat'],
    ['lng Infinity', { location: { lat: 0, lng: Number.POSITIVE_INFINITY } }, 'location.lng'],
    ['lat -Infinity', { location: { lat: Number.NEGATIVE_INFINITY, lng: 0 } }, 'location.lat'],
    ['radius NaN', { radiusMeters: Number.NaN }, 'radiusMeters'],
    ['radius Infinity', { radiusMeters: Number.POSITIVE_INFINITY }, 'radiusMeters'],
    ['a metadata value NaN', { metadata: { a: Number.NaN } }, 'metadata'],
  ])('refuses %s as InvalidFormat, on create and on update', async (_case, fields, field) => {
    expect(await detailsOf({ ...valid, ...fields })).toEqual({ field, issue: 'InvalidFormat' });
    expect(await detailsOf(fields, UpdatePointOfInterestDto)).toEqual({ field, issue: 'InvalidFormat' });
  });

  it('passes a valid body through as given', async () => {
    const body = { ...valid, radiusMeters: 10, address: null, metadata: { a: 1 } };
    expect(await pipe.transform(body, bodyOf(CreatePointOfInterestDto))).toEqual(body);
  });
});
