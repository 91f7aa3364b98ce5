import { type CreateShipmentRequest, ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { EntityManager } from 'typeorm';
import { describe, expect, it } from 'vitest';
import type { EvaluationRecordRepository } from '../evaluation/evaluation-record.repository.js';
import type { AlertLifecycle } from '../alerts/alert-lifecycle.js';
import type { DmsClient } from '../dms/dms.client.js';
import type { ShipmentRepository } from './shipment.repository.js';
import { ShipmentsService } from './shipments.service.js';

const SCOPE = { tenantId: '0190a4a0-0000-7000-8000-0000000000a1', accountId: '0190a4a0-0000-7000-8000-0000000000b1' };
const PLACE = '0190A4A0-0000-7000-8000-0000000000C1';

/** A repository whose insert fails as PostgreSQL would, after the service's own checks passed. */
function serviceFailingWith(error: unknown, knownPlaces: string[] = []): ShipmentsService {
  const repository = {
    insert: async (_shipment: unknown, prepare: (manager: EntityManager) => Promise<void>) => {
      await prepare({} as EntityManager);
      throw error;
    },
    lockPointsOfInterest: async () => new Set(knownPlaces),
  };
  return new ShipmentsService(repository as unknown as ShipmentRepository, {} as DmsClient, {} as AlertLifecycle, {} as EvaluationRecordRepository);
}

const create = (service: ShipmentsService, shipment: CreateShipmentRequest['shipment']) =>
  service.create({ ...SCOPE, shipment }).then(
    () => undefined,
    (error: unknown) => error,
  );
const pgError = (code: string, constraint: string) => Object.assign(new Error('violation'), { code, constraint });

describe('ShipmentsService write errors', () => {
  it('turns the unique violation of the reference index into 409 DuplicateReference, also when TypeORM wraps it', async () => {
    for (const error of [
      pgError('23505', 'shipments_account_reference_key'),
      Object.assign(new Error('query failed'), { driverError: pgError('23505', 'shipments_account_reference_key') }),
    ]) {
      const thrown = await create(serviceFailingWith(error), { name: 'x', reference: 'PO-1' });
      expect(thrown).toBeInstanceOf(DomainError);
      expect((thrown as DomainError).code).toBe(ErrorCode.DuplicateReference);
    }
  });

  it.each([
    ['shipments_origin_id_fkey', 'originId'],
    ['shipments_destination_id_fkey', 'destinationId'],
  ])('turns a violation of %s (a point of interest deleted meanwhile) into 400 %s UnknownReference', async (constraint, field) => {
    const service = serviceFailingWith(
      Object.assign(new Error('query failed'), { driverError: pgError('23503', constraint) }),
      [PLACE.toLowerCase()],
    );
    const thrown = await create(service, { name: 'x', [field]: PLACE });
    expect(thrown).toBeInstanceOf(DomainError);
    expect((thrown as DomainError).code).toBe(ErrorCode.InvalidParameter);
    expect((thrown as DomainError).details).toEqual({ field, issue: ParameterIssue.UnknownReference });
  });

  it('passes other database errors on unchanged', async () => {
    for (const error of [pgError('23505', 'shipments_pkey'), pgError('23503', 'sets_shipment_id_fkey'), new Error('connection lost')]) {
      expect(await create(serviceFailingWith(error), { name: 'x' })).toBe(error);
    }
  });
});
