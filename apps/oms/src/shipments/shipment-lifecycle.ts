import { ErrorCode, ShipmentAction, ShipmentStatus } from '@tracking/contracts';
import { DomainError } from '@tracking/core';

export type LifecycleStamp = 'departedAt' | 'deliveredAt' | 'completedAt' | 'cancelledAt';

interface Transition {
  from: readonly ShipmentStatus[];
  to: ShipmentStatus;
  /** The timestamp the action records. */
  stamp: LifecycleStamp;
}

/**
 * docs/api.md, "Shipments": Planned -start-> InTransit -deliver-> Delivered -complete-> Completed, and
 * Planned or InTransit -cancel-> Cancelled. Nothing else moves, so no state is ever skipped.
 */
const TRANSITIONS: Readonly<Record<ShipmentAction, Transition>> = {
  [ShipmentAction.Start]: { from: [ShipmentStatus.Planned], to: ShipmentStatus.InTransit, stamp: 'departedAt' },
  [ShipmentAction.Deliver]: { from: [ShipmentStatus.InTransit], to: ShipmentStatus.Delivered, stamp: 'deliveredAt' },
  [ShipmentAction.Complete]: { from: [ShipmentStatus.Delivered], to: ShipmentStatus.Completed, stamp: 'completedAt' },
  [ShipmentAction.Cancel]: {
    from: [ShipmentStatus.Planned, ShipmentStatus.InTransit],
    to: ShipmentStatus.Cancelled,
    stamp: 'cancelledAt',
  },
};

/** The status and timestamp `action` sets on a shipment in `from`; 409 InvalidStateTransition when it may not. */
export function transitionOf(from: ShipmentStatus, action: ShipmentAction): Pick<Transition, 'to' | 'stamp'> {
  const transition = TRANSITIONS[action];
  if (!transition?.from.includes(from)) {
    // Statuses as words of the API, without an article: "a InTransit" reads wrong, "an Planned" too.
    const needs = transition ? `; ${action} needs ${transition.from.join(' or ')}` : '';
    throw new DomainError(ErrorCode.InvalidStateTransition, `Cannot ${action} the shipment: its status is ${from}${needs}.`, { from, action });
  }
  return { to: transition.to, stamp: transition.stamp };
}
