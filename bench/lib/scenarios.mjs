// The measured calls, as autocannon scenarios (see load.mjs). `data` is what run.mjs prepared:
// { base, token, credentials, readAccountId, writeAccountId, shipmentIds, deepCursors, slots, runId }.
import { api } from './http.mjs';
import { shipmentBody } from './seed.mjs';

const pick = (list) => list[Math.floor(Math.random() * list.length)];
// Only on requests with a body: an empty body declared as JSON is a 400 MalformedRequest by design.
const JSON_BODY = { 'content-type': 'application/json' };

export function tokenIssuance(data) {
  return {
    name: 'token issuance',
    url: data.base,
    method: 'POST',
    path: '/v1/applications/token',
    headers: JSON_BODY,
    body: JSON.stringify(data.credentials),
  };
}

export function listShipments(data) {
  return {
    name: 'list shipments (first page)',
    url: data.base,
    path: `/v1/accounts/${data.readAccountId}/shipments?limit=50`,
    headers: { authorization: `Bearer ${data.token}` },
  };
}

export function listShipmentsDeep(data) {
  const prefix = `/v1/accounts/${data.readAccountId}/shipments?limit=50&cursor=`;
  return {
    name: 'list shipments (deep pages)',
    url: data.base,
    path: `${prefix}${encodeURIComponent(data.deepCursors[0].cursor)}`,
    headers: { authorization: `Bearer ${data.token}` },
    setupRequest: (request) => ({ ...request, path: prefix + encodeURIComponent(pick(data.deepCursors).cursor) }),
  };
}

export function getShipment(data) {
  const prefix = `/v1/accounts/${data.readAccountId}/shipments/`;
  return {
    name: 'get one shipment',
    url: data.base,
    path: prefix + data.shipmentIds[0],
    headers: { authorization: `Bearer ${data.token}` },
    setupRequest: (request) => ({ ...request, path: prefix + pick(data.shipmentIds) }),
  };
}

export function createShipment(data) {
  let created = 0;
  return {
    name: 'create shipment',
    url: data.base,
    method: 'POST',
    path: `/v1/accounts/${data.writeAccountId}/shipments`,
    headers: { authorization: `Bearer ${data.token}`, ...JSON_BODY },
    setupRequest: (request) => ({ ...request, body: JSON.stringify(shipmentBody(`NEW-${data.runId}`, created++)) }),
  };
}

/**
 * PUT .../shipments/{id}/sets/{setId}/devices/{deviceId}, each request moving a slot's device to the
 * slot's other set (see prepareAssignmentSlots). A slot serves one request at a time; before each run
 * every slot learns from the DMS which set its device is on, since the last requests of a run are
 * cut off without an answer.
 */
export function assignDevice(data) {
  const free = [];
  const path = (slot, target) =>
    `/v1/accounts/${data.writeAccountId}/shipments/${slot.shipmentId}/sets/${slot.setIds[target]}/devices/${slot.deviceId}`;
  return {
    name: 'assign a device',
    url: data.base,
    method: 'PUT',
    path: path(data.slots[0], 0),
    headers: { authorization: `Bearer ${data.token}` },
    beforeRun: async () => {
      await Promise.all(
        data.slots.map(async (slot) => {
          const { body } = await api(data.base, 'GET', `/v1/accounts/${data.writeAccountId}/devices/${slot.deviceId}`, { token: data.token });
          slot.on = body.setId === null ? null : slot.setIds.indexOf(body.setId);
        }),
      );
      free.splice(0, free.length, ...data.slots);
    },
    setupRequest: (request, context) => {
      // Every slot busy only when requests were cut off by timeouts; then share one (its errors are counted).
      const slot = free.pop() ?? pick(data.slots);
      context.slot = slot;
      context.target = slot.on === 0 ? 1 : 0;
      return { ...request, path: path(slot, context.target) };
    },
    onResponse: (status, _body, context) => {
      if (status === 204) context.slot.on = context.target;
      free.push(context.slot);
    },
  };
}

export function listDevices(data) {
  return {
    name: 'list devices (first page)',
    url: data.base,
    path: `/v1/accounts/${data.readAccountId}/devices?limit=50`,
    headers: { authorization: `Bearer ${data.token}` },
  };
}

/** The reference answers the same call on the same rows; its cursor is the position part of ours. */
export function referenceListShipments(data, reference) {
  return {
    name: 'reference: list shipments (first page)',
    url: reference.url,
    path: `/v1/accounts/${data.readAccountId}/shipments?limit=50`,
    headers: { authorization: `Bearer ${reference.token}` },
  };
}

export function referenceListShipmentsDeep(data, reference) {
  const prefix = `/v1/accounts/${data.readAccountId}/shipments?limit=50&cursor=`;
  const cursors = data.deepCursors.map(({ cursor }) => cursor.split('.')[0]);
  return {
    name: 'reference: list shipments (deep pages)',
    url: reference.url,
    path: prefix + cursors[0],
    headers: { authorization: `Bearer ${reference.token}` },
    setupRequest: (request) => ({ ...request, path: prefix + pick(cursors) }),
  };
}

/** The first yardstick (until issue 35): the same page with three fields per item, about a sixth of the bytes. */
export function referenceListShipmentsSlim(data, reference) {
  return {
    name: 'reference (slim body): list shipments (first page)',
    url: reference.url,
    path: `/slim/v1/accounts/${data.readAccountId}/shipments?limit=50`,
    headers: { authorization: `Bearer ${reference.token}` },
  };
}

export function referenceGetShipment(data, reference) {
  const prefix = `/v1/accounts/${data.readAccountId}/shipments/`;
  return {
    name: 'reference: get one shipment',
    url: reference.url,
    path: prefix + data.shipmentIds[0],
    headers: { authorization: `Bearer ${reference.token}` },
    setupRequest: (request) => ({ ...request, path: prefix + pick(data.shipmentIds) }),
  };
}

export function referenceListDevices(data, reference) {
  return {
    name: 'reference: list devices (first page)',
    url: reference.url,
    path: `/v1/accounts/${data.readAccountId}/devices?limit=50`,
    headers: { authorization: `Bearer ${reference.token}` },
  };
}

/** A consignee's tracking page polling its share link (no token; see prepareShareLink in seed.mjs). */
export function publicTracking(data) {
  return {
    name: 'public tracking (live link)',
    url: data.base,
    path: `/v1/public/tracking/${data.shareToken}`,
  };
}
