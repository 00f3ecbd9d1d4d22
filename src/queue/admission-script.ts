import { addPrioritizedJob, addStandardJob } from "bullmq/dist/cjs/scripts/index.js";
import { loadLua } from "../redis/load-lua.js";
import { ledgerCore, ledgerDispatch } from "./ledger-script.js";

const admitOp = loadLua(new URL("./admission-admit.lua", import.meta.url));

/**
 * BullMQ's own add script, as the installed BullMQ ships it, made a function of its keys
 * and arguments: the admission runs it exactly as `queue.add` would, with the arguments
 * BullMQ's own code built for it (capture-job-add.ts), so the jobs it adds are BullMQ's.
 */
export function asFunction(name: string, lua: string): string {
  return `local function ${name}(KEYS, ARGV)\n${lua}\nend\n`;
}

/**
 * The admission's script (admission.ts): the ledger's script (ledger-script.ts) plus one
 * op, `admit`, which stores a new id in one atomic step: the ledger's check, every route's
 * job, the archive's outbox entry and the ledger's claim, in that order. A script runs whole or not at
 * all, and Redis persists its writes as one transaction (MULTI/EXEC in the append-only
 * file and to replicas), so no crash leaves part of it (docs/architecture.md, "Admission").
 *
 * KEYS: the shard's window of buckets (as every ledger op on a single Redis), then 9 keys
 * per job (BullMQ's add script's), then the outbox stream when the archive is on.
 * ARGV: admit, field, now, ttl, bucket length (as every ledger op), receivedAt, origin,
 * type, stream, the route count m, the m route names, then per job its script (`s`
 * standard, `p` prioritized) and BullMQ's 3 arguments, then the outbox entry's fields and values if any.
 * Reply: 0 stored; 1 a duplicate (counted in its record, nothing else written); 2 the
 * record holds route deliveries but no arrival: nothing written, the caller stores the
 * event the long way with `recheck` (event-store.ts); 3 no record, but a finished job of an
 * earlier arrival (a dead letter, a delivered job still kept) holds a job's id: nothing
 * written, the caller stores the event the long way, where that job gets an id of its own
 * (fan-out.ts).
 */
export const admissionScript = `${ledgerCore}
${asFunction("addStandardJob", addStandardJob.content)}
${asFunction("addPrioritizedJob", addPrioritizedJob.content)}
${admitOp}
${ledgerDispatch}`;
