/**
 * JSON text of a value parsed from JSON, without recursion: `JSON.stringify` recurses
 * once per level and overflows the stack near 5,000 levels, while `JSON.parse` accepts
 * far deeper documents. Only used where `JSON.stringify` threw (`isStackOverflow`), so
 * the common path costs nothing. Same output as `JSON.stringify` for JSON values
 * (undefined members skipped, undefined in arrays and non-finite numbers as `null`).
 */
export function stringifyDeep(value: unknown): string {
  const out: string[] = [];
  // Each frame: the container, its keys (objects) and the next index.
  type Frame = { array: unknown[]; index: number } | { object: Record<string, unknown>; keys: string[]; index: number; wrote: boolean };
  const stack: Frame[] = [];
  const open = (item: unknown, inArray: boolean): void => {
    if (Array.isArray(item)) {
      out.push("[");
      stack.push({ array: item, index: 0 });
    } else if (typeof item === "object" && item !== null) {
      out.push("{");
      stack.push({ object: item as Record<string, unknown>, keys: Object.keys(item), index: 0, wrote: false });
    } else {
      out.push(scalar(item) ?? (inArray ? "null" : ""));
    }
  };
  open(value, true);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if ("array" in frame) {
      if (frame.index === frame.array.length) {
        out.push("]");
        stack.pop();
        continue;
      }
      if (frame.index > 0) out.push(",");
      open(frame.array[frame.index++], true);
      continue;
    }
    // Skip members JSON.stringify leaves out.
    while (frame.index < frame.keys.length && scalar(frame.object[frame.keys[frame.index]!]) === undefined && !isContainer(frame.object[frame.keys[frame.index]!])) frame.index++;
    if (frame.index === frame.keys.length) {
      out.push("}");
      stack.pop();
      continue;
    }
    const key = frame.keys[frame.index++]!;
    out.push(`${frame.wrote ? "," : ""}${JSON.stringify(key)}:`);
    frame.wrote = true;
    open(frame.object[key], false);
  }
  return out.join("");
}

/** A RangeError from a call stack too deep (what JSON.stringify throws on deep data). */
export function isStackOverflow(error: unknown): boolean {
  return error instanceof RangeError && /call stack/i.test(error.message);
}

function isContainer(value: unknown): boolean {
  return typeof value === "object" && value !== null;
}

/** JSON of a non-container; undefined for what JSON leaves out (undefined, functions, symbols). */
function scalar(value: unknown): string | undefined {
  if (value === null) return "null";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "null";
  if (typeof value === "string" || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "bigint") throw new TypeError("Do not know how to serialize a BigInt");
  return undefined;
}
