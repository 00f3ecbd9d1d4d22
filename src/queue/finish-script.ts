import { moveToFinished } from "bullmq/dist/cjs/scripts/index.js";
import { loadLua } from "../redis/load-lua.js";
import { asFunction } from "./admission-script.js";
import { ledgerCore, ledgerDispatch } from "./ledger-script.js";

const finishOp = loadLua(new URL("./delivery-finish.lua", import.meta.url));

/**
 * The delivered job's completion (dispatch/mark-at-completion.ts): the ledger's script
 * (ledger-script.ts) plus one op, `finish`, which runs BullMQ's own moveToFinished, with the
 * arguments BullMQ's code built for it, after the route's delivered mark, in one atomic
 * step: a crash never leaves a completed job without its mark, and the mark costs no call
 * of its own (docs/benchmarks.md, "The mark in the completion").
 *
 * KEYS: the shard's newest bucket, then moveToFinished's 14. ARGV: finish, field, now, ttl,
 * bucket length, route, at, mark, then moveToFinished's arguments. Reply: { the mark's (1
 * marked, 2 not in the newest bucket: nothing marked), moveToFinished's }.
 */
export const finishScript = `${ledgerCore}
${asFunction("moveToFinished", moveToFinished.content)}
${finishOp}
${ledgerDispatch}`;
