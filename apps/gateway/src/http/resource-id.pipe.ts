import { Injectable, type PipeTransform } from '@nestjs/common';
import type { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { validate as isUuid } from 'uuid';

/** A path id that is not a UUID names no resource: the resource's own 404, as for an unknown id. */
@Injectable()
export class ResourceIdPipe implements PipeTransform<string, string> {
  constructor(
    private readonly notFound: ErrorCode,
    private readonly resource: string,
  ) {}

  transform(value: string): string {
    if (!isUuid(value)) throw new DomainError(this.notFound, `${this.resource} ${value} does not exist in this account.`);
    return value.toLowerCase();
  }
}

/**
 * A path id below another one (`setId` below `shipmentId`): lower-cased, but not refused when it is
 * not a UUID, because the parent's 404 comes first; the service answers for both, in that order.
 */
@Injectable()
export class NestedResourceIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    return isUuid(value) ? value.toLowerCase() : value;
  }
}
