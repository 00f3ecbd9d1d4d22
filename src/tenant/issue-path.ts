/** A zod issue path as a reader writes it: `eventStreams[3].destination.type`. */
export function issuePath(path: readonly PropertyKey[]): string {
  return path.map((key, index) => (typeof key === "number" ? `[${key}]` : `${index > 0 ? "." : ""}${String(key)}`)).join("");
}
