// The end of a networked herd run: wait until datagrams stop arriving before counters are compared.

/**
 * Resolves once `received()` (a count of datagrams taken in) has not changed for `quietMs`, or
 * after `maxMs` in all. Checked every 25 ms: the end of a run waits for the last datagrams in
 * flight, on either side, before their counters are compared.
 */
export async function untilQuiet(received: () => number, quietMs: number, maxMs: number): Promise<void> {
  const started = performance.now();
  let last = received();
  let quietSince = started;
  while (performance.now() - quietSince < quietMs && performance.now() - started < maxMs) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    const now = received();
    if (now !== last) {
      last = now;
      quietSince = performance.now();
    }
  }
}
