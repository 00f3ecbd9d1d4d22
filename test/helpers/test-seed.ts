/**
 * The seed of a randomised test: TEST_SEED when set (to repeat a run), else a fresh one.
 * Printed either way, so a failure can be replayed: `TEST_SEED=<n> npx vitest run <file>`.
 */
export function testSeed(what: string): number {
  const given = process.env.TEST_SEED;
  if (given !== undefined && !/^\d+$/.test(given)) throw new Error(`TEST_SEED: give a whole number, e.g. TEST_SEED=12345 (got "${given}")`);
  const seed = given === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(given);
  console.info(`${what}: seed ${seed} (TEST_SEED=${seed} repeats it)`);
  return seed;
}

/** A small seeded generator (mulberry32) in place of Math.random: numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
