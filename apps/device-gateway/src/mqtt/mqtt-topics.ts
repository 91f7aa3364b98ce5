/**
 * The topics of one device: it publishes readings to `devices/{identifier}/readings`, may subscribe to
 * `devices/{identifier}/rejected`, and may touch nothing outside `devices/{identifier}/#`.
 */
export function deviceTopics(identifier: string) {
  const prefix = `devices/${identifier}/`;
  return {
    readings: `${prefix}readings`,
    rejected: `${prefix}rejected`,
    /** A topic name (no wildcards) inside the device's own tree. */
    ownsTopic: (topic: string) => topic.startsWith(prefix) && topic.length > prefix.length,
    /**
     * A topic filter that can only match topics inside the device's own tree: it starts with the
     * literal `devices/{identifier}/` (a `+` or `#` before that could match another device's topics).
     */
    ownsFilter: (filter: string) => filter.startsWith(prefix) && filter.length > prefix.length && isValidFilter(filter),
  };
}

/** MQTT's rules for a topic filter: `#` only as a whole last level, `+` only as a whole level. */
export function isValidFilter(filter: string): boolean {
  const levels = filter.split('/');
  return levels.every((level, i) => {
    if (level.includes('#')) return level === '#' && i === levels.length - 1;
    if (level.includes('+')) return level === '+';
    return true;
  });
}

/**
 * Whether `filter` matches the topic name `topic` (MQTT 3.1.1 section 4.7). Hand-written (a dozen
 * lines) because the listener matches one topic, `devices/{identifier}/rejected`, against a device's
 * few subscriptions; a broker's subscription tree (qlobber, mqemitter) would cost memory per connection.
 */
export function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return true;
    if (i >= t.length) return false;
    if (f[i] !== '+' && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}
