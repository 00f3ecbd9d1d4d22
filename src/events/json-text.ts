import { isStackOverflow, stringifyDeep } from "./stringify-deep.js";

/** `JSON.stringify`, or for data nested too deep for it, the same text written without recursion (stringify-deep.ts). */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (!isStackOverflow(error)) throw error;
    return stringifyDeep(value);
  }
}
