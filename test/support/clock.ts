/**
 * Waits until the local clock has passed `instant` (epoch ms): assignment periods start and end at the
 * server's transaction time, with microseconds, and readings carry milliseconds, so a test reading is
 * recorded strictly after the link it means to follow by taking it a tick later.
 */
export async function clockPast(instant: number): Promise<number> {
  while (Date.now() <= instant) await new Promise((resolve) => setTimeout(resolve, 1));
  return Date.now();
}
