import 'reflect-metadata';
import { Controller, Get, Post, Query } from '@nestjs/common';
import { GUARDS_METADATA, INTERCEPTORS_METADATA } from '@nestjs/common/internal';
import type { ModulesContainer } from '@nestjs/core';
import { describe, expect, it } from 'vitest';
import { IdempotencyInterceptor } from '../protection/idempotency/idempotency.interceptor.js';
import { ApiController, assertApiControllers, IgnoresQuery, RefusesQueryGuard } from './api-controller.js';

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
  create(): string {
    return 'created';
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
