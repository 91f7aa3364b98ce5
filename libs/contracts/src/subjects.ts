/**
 * Every NATS subject of the system. Services subscribe to `<prefix><subject>`, where the prefix comes
 * from configuration (`NATS_SUBJECT_PREFIX`), so parallel runs never answer each other.
 */
export const Subjects = {
  oms: {
    ping: 'oms.ping',
    shipments: {
      list: 'oms.shipments.list',
      create: 'oms.shipments.create',
      get: 'oms.shipments.get',
      update: 'oms.shipments.update',
      delete: 'oms.shipments.delete',
      transition: 'oms.shipments.transition',
    },
    sets: {
      list: 'oms.sets.list',
      create: 'oms.sets.create',
      get: 'oms.sets.get',
      update: 'oms.sets.update',
      delete: 'oms.sets.delete',
    },
    items: {
      list: 'oms.items.list',
      create: 'oms.items.create',
      get: 'oms.items.get',
      update: 'oms.items.update',
      delete: 'oms.items.delete',
    },
    pointsOfInterest: {
      list: 'oms.points-of-interest.list',
      create: 'oms.points-of-interest.create',
      get: 'oms.points-of-interest.get',
      update: 'oms.points-of-interest.update',
      delete: 'oms.points-of-interest.delete',
    },
    assignments: {
      assign: 'oms.assignments.assign',
      unassign: 'oms.assignments.unassign',
    },
    webhooks: {
      list: 'oms.webhooks.list',
      create: 'oms.webhooks.create',
      get: 'oms.webhooks.get',
      update: 'oms.webhooks.update',
      delete: 'oms.webhooks.delete',
      rotateSecret: 'oms.webhooks.rotate-secret',
      enable: 'oms.webhooks.enable',
      test: 'oms.webhooks.test',
      deliveries: 'oms.webhooks.deliveries',
      redeliver: 'oms.webhooks.redeliver',
    },
    operations: {
      create: 'oms.operations.create',
      list: 'oms.operations.list',
      get: 'oms.operations.get',
      results: 'oms.operations.results',
      cancel: 'oms.operations.cancel',
    },
    events: {
      list: 'oms.events.list',
    },
    alerts: {
      list: 'oms.alerts.list',
      get: 'oms.alerts.get',
      acknowledge: 'oms.alerts.acknowledge',
    },
    visits: {
      list: 'oms.visits.list',
    },
    shareLinks: {
      create: 'oms.share-links.create',
      list: 'oms.share-links.list',
      delete: 'oms.share-links.delete',
      /** The public tracking view of a live link, by its token's digest (the gateway's only unauthenticated read). */
      resolve: 'oms.share-links.resolve',
    },
  },
  dms: {
    ping: 'dms.ping',
    devices: {
      list: 'dms.devices.list',
      create: 'dms.devices.create',
      get: 'dms.devices.get',
      update: 'dms.devices.update',
      delete: 'dms.devices.delete',
      retire: 'dms.devices.retire',
      /** Called by the OMS only, inside its shipment-locked transaction. */
      assign: 'dms.devices.assign',
      unassign: 'dms.devices.unassign',
      release: 'dms.devices.release',
      /** The device ids of some sets, for the gateway to fill `deviceIds`. */
      linked: 'dms.devices.linked',
    },
    credentials: {
      create: 'dms.credentials.create',
      list: 'dms.credentials.list',
      delete: 'dms.credentials.delete',
      /** Device gateway only: who a connecting tracker is. */
      authenticate: 'dms.credentials.authenticate',
      /** Device gateway only: which of its connections' credentials are still live. */
      live: 'dms.credentials.live',
    },
    readings: {
      /** One chunk of a `POST /readings` batch, judged and stored in one transaction. */
      ingest: 'dms.readings.ingest',
      /** Device gateway only: many devices' messages, stored in one transaction. */
      ingestFromDevices: 'dms.readings.ingest-from-devices',
      list: 'dms.readings.list',
      /**
       * The readings a shipment's devices recorded within their assignment periods on it, from an instant
       * on, paged in (recordedAt, deviceId) order: the OMS restores a shipment's geofence evaluation with it.
       */
      ofShipment: 'dms.readings.ofShipment',
    },
    tracks: {
      /** A shipment's positions within its assignment periods; the gateway asks once the OMS found the shipment. */
      get: 'dms.tracks.get',
    },
    /** Called by the OMS's bulk-job workers only: one chunk of an operation's entries at a time. */
    operations: {
      link: 'dms.operations.link',
      retire: 'dms.operations.retire',
      settle: 'dms.operations.settle',
      /** The OMS's retention: forget the outcomes of finished operations it is about to delete. */
      purge: 'dms.operations.purge',
    },
  },
} as const;

type Leaves<T> = T extends string ? T : { [K in keyof T]: Leaves<T[K]> }[keyof T];
export type Subject = Leaves<typeof Subjects>;

/** NATS headers the gateway sets on every request. */
export const Headers = {
  requestId: 'x-request-id',
} as const;
