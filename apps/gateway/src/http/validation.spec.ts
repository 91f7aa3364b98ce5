import 'reflect-metadata';
import type { ArgumentMetadata, ValidationError } from '@nestjs/common';
import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { Type } from 'class-transformer';
import { IsDefined, IsInt, IsString, Length, Max, Min, ValidateNested } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { CreateShipmentDto, UpdateShipmentDto } from '../shipments/dto/shipment.dto.js';
import { createValidationPipe, toInvalidParameter } from './validation.js';

class LocationDto {
  @IsDefined() @IsInt() @Min(-90) @Max(90) lat: number;
}

class PlaceDto {
  @IsDefined() @IsString() @Length(1, 200) name: string;
  @IsDefined() @ValidateNested() @Type(() => LocationDto) location: LocationDto;
}

const pipe = createValidationPipe();
const bodyOf = (metatype: new () => object): ArgumentMetadata => ({ type: 'body', metatype, data: undefined });

async function rejection(value: unknown, metatype: new () => object): Promise<DomainError> {
  try {
    await pipe.transform(value, bodyOf(metatype));
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return error as DomainError;
  }
  throw new Error(`accepted ${JSON.stringify(value)}`);
}

async function expectIssue(value: unknown, metatype: new () => object, field: string, issue: ParameterIssue): Promise<void> {
  const error = await rejection(value, metatype);
  expect(error.code).toBe(ErrorCode.InvalidParameter);
  expect(error.details).toEqual({ field, issue });
  expect(error.message.length).toBeGreaterThan(0);
}

describe('toInvalidParameter', () => {
  const error = (overrides: Partial<ValidationError>): ValidationError => ({ property: 'name', children: [], ...overrides });

  it('maps a missing value to Required', () => {
    const mapped = toInvalidParameter([error({ value: undefined, constraints: { isDefined: 'name should not be null or undefined' } })]);
    expect(mapped.details).toEqual({ field: 'name', issue: ParameterIssue.Required });
  });

  it('maps a whitelist failure to UnknownField, or ReadOnly for fields the API sets', () => {
    const unknown = toInvalidParameter([error({ property: 'colour', value: 'red', constraints: { whitelistValidation: 'x' } })]);
    expect(unknown.details).toEqual({ field: 'colour', issue: ParameterIssue.UnknownField });
    for (const property of ['id', 'status', 'createdAt', 'updatedAt', 'cancelledAt', 'deviceIds']) {
      const readOnly = toInvalidParameter([error({ property, value: 'x', constraints: { whitelistValidation: 'x' } })]);
      expect(readOnly.details).toEqual({ field: property, issue: ParameterIssue.ReadOnly });
    }
  });

  it('maps size and range rules to OutOfRange', () => {
    for (const rule of ['isLength', 'minLength', 'maxLength', 'min', 'max', 'arrayMaxSize', 'isNotEmpty']) {
      const mapped = toInvalidParameter([error({ value: 'x', constraints: { [rule]: 'out of range' } })]);
      expect(mapped.details, rule).toEqual({ field: 'name', issue: ParameterIssue.OutOfRange });
    }
  });

  it('maps type and format rules to InvalidFormat', () => {
    for (const rule of ['isString', 'isInt', 'isUuid', 'isEnum', 'isDateString', 'isDefined']) {
      const mapped = toInvalidParameter([error({ value: 5, constraints: { [rule]: 'bad format' } })]);
      expect(mapped.details, rule).toEqual({ field: 'name', issue: ParameterIssue.InvalidFormat });
    }
  });

  it('reports a wrong type before a wrong size, whatever the order of the rules', () => {
    const mapped = toInvalidParameter([error({ value: 5, constraints: { isLength: 'length', isString: 'must be a string' } })]);
    expect(mapped.details).toEqual({ field: 'name', issue: ParameterIssue.InvalidFormat });
    expect(mapped.message).toBe('must be a string.');
  });

  it('names nested fields by their path', () => {
    const mapped = toInvalidParameter([
      error({
        property: 'location',
        value: {},
        children: [error({ property: 'lat', value: 100, constraints: { max: 'lat must not be greater than 90' } })],
      }),
    ]);
    expect(mapped.details).toEqual({ field: 'location.lat', issue: ParameterIssue.OutOfRange });
  });

  it('reports only the first failed field', () => {
    const mapped = toInvalidParameter([
      error({ property: 'first', value: undefined, constraints: { isDefined: 'x' } }),
      error({ property: 'second', value: 5, constraints: { isString: 'x' } }),
    ]);
    expect(mapped.details).toEqual({ field: 'first', issue: ParameterIssue.Required });
  });

  it('still answers InvalidParameter when there is no error to name', () => {
    expect(toInvalidParameter([]).details).toEqual({ field: 'body', issue: ParameterIssue.InvalidFormat });
  });
});

describe('the validation pipe on request bodies', () => {
  it('passes a valid body as an instance of its class', async () => {
    const value = await pipe.transform({ name: 'Fine' }, bodyOf(CreateShipmentDto));
    expect(value).toBeInstanceOf(CreateShipmentDto);
    expect(value).toEqual({ name: 'Fine' });
  });

  it.each([
    ['missing name', {}, 'name', ParameterIssue.Required],
    ['name null', { name: null }, 'name', ParameterIssue.InvalidFormat],
    ['name a number', { name: 5 }, 'name', ParameterIssue.InvalidFormat],
    ['name an array', { name: ['a'] }, 'name', ParameterIssue.InvalidFormat],
    ['empty name', { name: '' }, 'name', ParameterIssue.OutOfRange],
    ['name of 201 characters', { name: 'x'.repeat(201) }, 'name', ParameterIssue.OutOfRange],
    ['unknown field', { name: 'ok', colour: 'red' }, 'colour', ParameterIssue.UnknownField],
    ['id', { name: 'ok', id: 'x' }, 'id', ParameterIssue.ReadOnly],
    ['status', { name: 'ok', status: 'Planned' }, 'status', ParameterIssue.ReadOnly],
    ['createdAt', { name: 'ok', createdAt: 'x' }, 'createdAt', ParameterIssue.ReadOnly],
  ])('creating: %s', async (_case, body, field, issue) => {
    await expectIssue(body, CreateShipmentDto, field, issue);
  });

  it('updating: an omitted name is fine, a null one is not', async () => {
    expect(await pipe.transform({}, bodyOf(UpdateShipmentDto))).toEqual({});
    await expectIssue({ name: null }, UpdateShipmentDto, 'name', ParameterIssue.InvalidFormat);
    await expectIssue({ name: '' }, UpdateShipmentDto, 'name', ParameterIssue.OutOfRange);
    await expectIssue({ status: 'Delivered' }, UpdateShipmentDto, 'status', ParameterIssue.ReadOnly);
  });

  it('names nested fields by their path', async () => {
    await expectIssue({ name: 'Port', location: { lat: 91 } }, PlaceDto, 'location.lat', ParameterIssue.OutOfRange);
    await expectIssue({ name: 'Port', location: {} }, PlaceDto, 'location.lat', ParameterIssue.Required);
    await expectIssue({ name: 'Port', location: { lat: 1, lng: 2 } }, PlaceDto, 'location.lng', ParameterIssue.UnknownField);
  });

  it.each([
    ['an array', [{ name: 'x' }]],
    ['a string', 'x'],
    ['null', null],
    ['a number', 3],
    ['missing', undefined],
  ])('rejects a body that is %s as MalformedRequest', async (_case, body) => {
    const error = await rejection(body, CreateShipmentDto);
    expect(error.code).toBe(ErrorCode.MalformedRequest);
  });
});
