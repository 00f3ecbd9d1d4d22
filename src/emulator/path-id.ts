import { ApiError } from "./api-error.js";

/**
 * Stream and event ids in paths are exactly 26 characters (docs/tenant.md#identifiers); the
 * real API rejects others with a 400 worded like this before looking anything up.
 */
export function pathId(property: string, value: string | string[] | undefined): string {
  const id = typeof value === "string" ? value : "";
  if (id.length < 26) throw new ApiError(400, `Path validation error: 'String is too short (${id.length} chars), requires 26' on property ${property}.`, "invalid_uri");
  if (id.length > 26) throw new ApiError(400, `Path validation error: 'String is too long (${id.length} chars), maximum 26' on property ${property}.`, "invalid_uri");
  return id;
}
