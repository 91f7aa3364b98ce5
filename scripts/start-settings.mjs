// What `npm start` (scripts/start.mjs) sets for people rather than for production: log lines and the
// evaluation's lateness bound; a module of its own so that a unit test can check it without a stack.

/**
 * The environment `npm start` gives each service beyond its own: readable log lines (`LOG_FORMAT=pretty`,
 * coloured when the terminal is) and a 30 s lateness bound, so that a visit or an alert appears half a
 * minute after a device pauses instead of ten. Anything already set is passed on as it is.
 */
export function localSettings(env, colourTerminal) {
  const settings = {
    LOG_FORMAT: env.LOG_FORMAT ?? 'pretty',
    EVALUATION_LATENESS_SECONDS: env.EVALUATION_LATENESS_SECONDS ?? '30',
  };
  if (colourTerminal && env.FORCE_COLOR === undefined && env.NO_COLOR === undefined) settings.FORCE_COLOR = '1';
  return settings;
}

/** The line `npm start` prints about the lateness bound, with the value the services were given. */
export function latenessNotice(env) {
  const seconds = localSettings(env, false).EVALUATION_LATENESS_SECONDS;
  const local = env.EVALUATION_LATENESS_SECONDS === undefined;
  return (
    `Visits, alerts and automatic transitions are decided from readings in event time: each is published once ` +
    `the shipment's devices have sent readings past the moment that confirms it, or have been silent for ${seconds} s ` +
    `(EVALUATION_LATENESS_SECONDS=${seconds}${local ? ' for npm start; 600 by default' : ''}).`
  );
}
