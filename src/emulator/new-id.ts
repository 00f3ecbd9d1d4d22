import { randomInt } from "node:crypto";

/** Base58 (Bitcoin alphabet): what real stream and event ids are made of (docs/tenant.md#identifiers). */
const base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/**
 * A prefixed random id: `est_` + 22 (streams) and `evt_` + 22 (events) make the
 * 26 characters the API requires (docs/tenant.md#identifiers); token exchange profiles use `tep_` + 16.
 */
export function newId(prefix: "est_" | "evt_" | "tep_"): string {
  const length = prefix === "tep_" ? 16 : 22;
  let id = prefix;
  for (let i = 0; i < length; i++) id += base58[randomInt(base58.length)];
  return id;
}
