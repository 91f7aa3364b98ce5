import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { RequestMethod } from '@nestjs/common';
import { Body, Controller, Delete, type ExecutionContext, Get, Post, Query } from '@nestjs/common';
import { GUARDS_METADATA, INTERCEPTORS_METADATA, METHOD_METADATA, ROUTE_ARGS_METADATA, RouteParamtypes } from '@nestjs/common/internal';
import type { ModulesContainer } from '@nestjs/core';
import { describe, expect, it } from 'vitest';
import { IdempotencyInterceptor } from '../protection/idempotency/idempotency.interceptor.js';
import { DomainError } from '@tracking/core';
import { ApiController, assertApiControllers, IgnoresQuery, RefusesBodyGuard, RefusesQueryGuard } from './api-controller.js';

@ApiController('things')
class ThingsController {
  @Get()
  list(@Query() query: Record<string, unknown>): unknown {
    return query;
  }

  @Get(':id')
  get(): string {
    return 'thing';
  }

  @Get('document')
  @IgnoresQuery()
  document(): string {
    return 'document';
  }

  @Post()
  create(@Body() body: unknown): unknown {
    return body;
  }

  @Post(':id/archive')
  archive(): string {
    return 'archived';
  }

  @Delete(':id')
  remove(): string {
    return 'removed';
  }

  /** Not a route. */
  helper(): string {
    return 'help';
  }
}

@Controller('plain')
class PlainController {
  @Get()
  get(): string {
    return 'plain';
  }
}

const guardsOf = (name: keyof ThingsController): unknown[] => Reflect.getMetadata(GUARDS_METADATA, ThingsController.prototype[name]) ?? [];
const interceptorsOf = (name: keyof ThingsController): unknown[] =>
  Reflect.getMetadata(INTERCEPTORS_METADATA, ThingsController.prototype[name]) ?? [];

function modulesWith(...controllers: object[]): ModulesContainer {
  const module = { controllers: new Map(controllers.map((metatype, index) => [index, { metatype }])) };
  return new Map([['module', module]]) as unknown as ModulesContainer;
}

describe('ApiController', () => {
  it('refuses a query on the routes that read none, and only there', () => {
    expect(guardsOf('get')).toEqual([RefusesQueryGuard]);
    expect(guardsOf('create')).toEqual([RefusesQueryGuard]);
    expect(guardsOf('list')).toEqual([]);
    expect(guardsOf('document')).toEqual([]);
    expect(guardsOf('helper')).toEqual([]);
  });

  it('refuses a body on the routes that read none, and only there', () => {
    expect(guardsOf('archive')).toEqual([RefusesQueryGuard, RefusesBodyGuard]);
    expect(guardsOf('remove')).toEqual([RefusesQueryGuard, RefusesBodyGuard]);
    expect(guardsOf('create')).not.toContain(RefusesBodyGuard);
    expect(guardsOf('get')).not.toContain(RefusesBodyGuard);
    expect(guardsOf('helper')).toEqual([]);
  });

  it('puts every POST, and nothing else, through the idempotency interceptor', () => {
    expect(interceptorsOf('create')).toEqual([IdempotencyInterceptor]);
    expect(interceptorsOf('list')).toEqual([]);
    expect(interceptorsOf('get')).toEqual([]);
  });

  it('lets a gateway start only with ApiControllers', () => {
    expect(() => assertApiControllers(modulesWith(ThingsController))).not.toThrow();
    expect(() => assertApiControllers(modulesWith(ThingsController, PlainController))).toThrow(/PlainController/);
  });
});

describe('RefusesBodyGuard', () => {
  const withBody = (body: unknown) => ({ switchToHttp: () => ({ getRequest: () => ({ body }) }) }) as unknown as ExecutionContext;
  const refusal = (body: unknown): unknown => {
    try {
      new RefusesBodyGuard().canActivate(withBody(body));
      return undefined;
    } catch (error) {
      return error instanceof DomainError ? { code: error.code, details: error.details } : error;
    }
  };

  it('lets no body and an empty object through', () => {
    expect(refusal(undefined)).toBeUndefined();
    expect(refusal({})).toBeUndefined();
  });

  it('names the first field of a body as UnknownField', () => {
    expect(refusal({ x: 1, y: 2 })).toEqual({ code: 'InvalidParameter', details: { field: 'x', issue: 'UnknownField' } });
    expect(refusal({ status: 'Completed' })).toEqual({ code: 'InvalidParameter', details: { field: 'status', issue: 'UnknownField' } });
  });

  it('refuses JSON that is not an object as malformed, as routes with a body do', () => {
    for (const body of [null, [], [1], 'text', 1, true]) expect(refusal(body)).toMatchObject({ code: 'MalformedRequest' });
  });
});

/**
 * `ApiController` reads metadata that Nest's route decorators write but do not document (`@nestjs/common/internal`).
 * Checked against @nestjs/common 12.5.1: an upgrade that changes it fails here, naming what to re-check.
 */
describe('Nest metadata ApiController relies on (written against @nestjs/common 12.5.1)', () => {
  const packageJson = join(dirname(createRequire(import.meta.url).resolve('@nestjs/common')), 'package.json');
  const installed = (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
  const recheck = `@nestjs/common ${installed} (written against 12.5.1): re-check ApiController's per-route guards in apps/gateway/src/http/api-controller.ts`;

  it('is the version ApiController was checked against', () => {
    expect(installed, recheck).toBe('12.5.1');
  });

  it('finds a route method under METHOD_METADATA and its @Query()/@Body() under ROUTE_ARGS_METADATA as "<kind>:<index>"', () => {
    const prototype = ThingsController.prototype as unknown as Record<string, object>;
    expect(Reflect.getMetadata(METHOD_METADATA, prototype.list!), recheck).toBe(RequestMethod.GET);
    expect(Reflect.getMetadata(METHOD_METADATA, prototype.create!), recheck).toBe(RequestMethod.POST);
    expect(Object.keys(Reflect.getMetadata(ROUTE_ARGS_METADATA, ThingsController, 'list') as object), recheck).toEqual([`${RouteParamtypes.QUERY}:0`]);
    expect(Object.keys(Reflect.getMetadata(ROUTE_ARGS_METADATA, ThingsController, 'create') as object), recheck).toEqual([`${RouteParamtypes.BODY}:0`]);
  });
});
