// How the console's views stay current: read again every REFRESH_MS, and at once when the event feed
// brings something about what they show.

/** Positions and tracks on screen are read again at least this often. */
export const REFRESH_MS = 10_000;

/**
 * Runs `refresh` now, then REFRESH_MS after each run ends, and again as soon as `wake()` is called (a call
 * during a run makes one more run right after it, never two at once); `stop()` ends it.
 */
export function refresher(refresh) {
  let timer;
  let running = false;
  let again = false;
  let stopped = false;
  const run = async () => {
    clearTimeout(timer);
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await refresh();
    } finally {
      running = false;
      if (!stopped) timer = setTimeout(run, again ? 0 : REFRESH_MS);
      again = false;
    }
  };
  run();
  return { wake: run, stop: () => ((stopped = true), clearTimeout(timer)) };
}
