// Small DOM and formatting helpers of the console: elements are built with textContent only (never
// innerHTML), so no value from the API can become markup.

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** An element: `el('td', {class: 'x', dataset: {id}}, 'text', child, ...)`; null and false children are skipped. */
export function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'dataset') Object.assign(element.dataset, value);
    else if (name === 'onclick') element.addEventListener('click', value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function formatTime(iso) {
  return iso ? when.format(new Date(iso)) : '';
}

/** `51.8850, 4.4200` of a `{lat, lng}`. */
export function formatPosition(position) {
  return position ? `${position.lat.toFixed(4)}, ${position.lng.toFixed(4)}` : '';
}

/** The estimate as a person reads it, with its range when it has one. */
export function formatEta(eta) {
  if (!eta || !eta.arrivalAt) return '';
  const range = eta.earliestAt && eta.latestAt && eta.earliestAt !== eta.latestAt ? ` (${formatTime(eta.earliestAt)} – ${formatTime(eta.latestAt)})` : '';
  return `${formatTime(eta.arrivalAt)}${range}`;
}

/** A status as a badge, coloured by its value (console.css). */
export function statusBadge(status) {
  return el('span', { class: 'status', 'data-status': status }, status);
}

/** A short line saying what an event is about. */
export function describeEvent(event) {
  const data = event.data ?? {};
  switch (event.type.split('.')[0]) {
    case 'shipment':
      if (event.type === 'shipment.eta_changed') return `ETA ${formatEta(data.eta) || 'none'}`;
      if (event.type === 'shipment.arrived' || event.type === 'shipment.departed') return `place ${data.poiId}`;
      return data.name ? `${data.name} (${data.status})` : '';
    case 'alert':
      return data.kind ? `${data.kind}, ${data.status ?? ''}` : '';
    case 'device':
      return data.serialNumber ?? data.deviceId ?? '';
    default:
      return '';
  }
}
