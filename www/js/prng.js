// Seeded randomness for the demo: every decision of a run (each resumer's
// order and crashes, the scheduler's interleaving, the timer service's
// draws) comes from one 32-bit seed, so the same seed replays the same run.

/** mulberry32: a small, fast 32-bit PRNG; returns draws in [0, 1). */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A stream for `stream` (a small integer) derived from `seed`, spread so
 * that nearby seeds do not give swapped streams. */
export function streamOf(seed, stream) {
  return mulberry32((seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0);
}

/** Fisher-Yates with `random`. */
export function shuffle(items, random) {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** A fresh seed from the browser's crypto. */
export function freshSeed() {
  return crypto.getRandomValues(new Uint32Array(1))[0];
}
