/**
 * The candidate closest to a mistyped name (`matches` → `match`, `usr.*` → `user.*`), for
 * "did you mean" hints; undefined when none is close: at most 2 edits, and fewer than a
 * third of the name's length, so a hint is never a wild guess.
 */
export function nearestName(name: string, candidates: readonly string[]): string | undefined {
  const limit = Math.min(2, Math.max(1, Math.floor(name.length / 3)));
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}

/** Levenshtein distance: insertions, deletions and substitutions, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
