import { validateHeaderName, validateHeaderValue } from "node:http";

/**
 * What keeps a header from being sent, if anything: its name (not an HTTP token) or its
 * value (a control character, or one above U+00FF). node:http's checks, which are
 * undici's too. Callers say it in their own words.
 */
export function headerFault(name: string, value: string): "name" | "value" | undefined {
  try {
    validateHeaderName(name);
  } catch {
    return "name";
  }
  try {
    validateHeaderValue(name, value);
  } catch {
    return "value";
  }
  return undefined;
}
