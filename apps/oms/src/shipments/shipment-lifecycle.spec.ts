import { ErrorCode, ShipmentAction, ShipmentStatus } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { describe, expect, it } from 'vitest';
import { transitionOf } from './shipment-lifecycle.js';

const ALLOWED: [ShipmentStatus, ShipmentAction, ShipmentStatus, string][] = [
  [ShipmentStatus.Planned, ShipmentAction.Start, ShipmentStatus.InTransit, 'departedAt'],
  [ShipmentStatus.InTransit, ShipmentAction.Deliver, ShipmentStatus.Delivered, 'deliveredAt'],
  [ShipmentStatus.Delivered, ShipmentAction.Complete, ShipmentStatus.Completed, 'completedAt'],
  [ShipmentStatus.Planned, ShipmentAction.Cancel, ShipmentStatus.Cancelled, 'cancelledAt'],
  [ShipmentStatus.InTransit, ShipmentAction.Cancel, ShipmentStatus.Cancelled, 'cancelledAt'],
];

describe('transitionOf', () => {
  it.each(ALLOWED)('%s -%s-> %s, setting %s', (from, action, to, stamp) => {
    expect(transitionOf(from, action)).toEqual({ to, stamp });
  });

  const refused = Object.values(ShipmentStatus).flatMap((from) =>
    Object.values(ShipmentAction)
      .filter((action) => !ALLOWED.some(([allowedFrom, allowedAction]) => allowedFrom === from && allowedAction === action))
      .map((action) => [from, action] as const),
  );

  it('refuses the 15 other pairs', () => {
    expect(refused).toHaveLength(15);
  });

  it.each(refused)('refuses %s -%s-> with InvalidStateTransition {from, action}', (from, action) => {
    let thrown: unknown;
    try {
      transitionOf(from, action);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(DomainError);
    expect((thrown as DomainError).code).toBe(ErrorCode.InvalidStateTransition);
    expect((thrown as DomainError).details).toEqual({ from, action });
  });

  it('says in words what went wrong and what the action needs, without an article before a status (no "a InTransit")', () => {
    const message = (from: ShipmentStatus, action: ShipmentAction) => {
      try {
        transitionOf(from, action);
      } catch (error) {
        return (error as DomainError).message;
      }
      throw new Error(`${from} -${action}-> was allowed`);
    };
    expect(message(ShipmentStatus.InTransit, ShipmentAction.Start)).toBe('Cannot start the shipment: its status is InTransit; start needs Planned.');
    expect(message(ShipmentStatus.Completed, ShipmentAction.Cancel)).toBe('Cannot cancel the shipment: its status is Completed; cancel needs Planned or InTransit.');
    for (const [from, action] of refused) expect(message(from, action)).not.toMatch(/\ban? (Planned|InTransit|Delivered|Completed|Cancelled)\b/);
  });
});
