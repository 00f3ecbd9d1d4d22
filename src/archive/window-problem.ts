/** A search's or replay's window that holds no time (until not after since), in one line saying what to change; undefined when it is a window. */
export function windowProblem(since: number, until: number): string | undefined {
  if (until > since) return undefined;
  return `until (${new Date(until).toISOString()}) must be after since (${new Date(since).toISOString()}): give a later until, or an earlier since`;
}
