import type { Cluster, Redis } from "ioredis";
import { admissionScript } from "./admission-script.js";
import { createCallBatcher, type CallBatcher } from "./call-batcher.js";
import { finishScript } from "./finish-script.js";
import { ledgerScript } from "./ledger-script.js";

/** One ledger call: the shard its keys are in, the keys, and the script's arguments. */
export interface LedgerCall {
  shard: number;
  keys: string[];
  args: Array<string | number | Buffer>;
}

export interface LedgerTransport {
  /** One ledger script call, sent with the others of this event-loop turn. */
  send(call: LedgerCall): Promise<unknown>;
  /** One ledger script call that can wait: gathered for up to `gatherMs` (createLedgerTransport), fewer calls of more ops; per turn on a cluster. */
  sendGathered(call: LedgerCall): Promise<unknown>;
  /** Sends what is gathered now; resolves once every call sent has its answer. */
  flush(): Promise<void>;
  /** One admission script call, sent with the others of this turn. */
  admit(call: LedgerCall): Promise<unknown>;
  /** One delivered job's completion with its mark (finish-script.ts), sent with the others of this turn. */
  finish(call: LedgerCall): Promise<unknown>;
  /** True once calls go one shard per script call (a cluster, or an endpoint that enforces slots). */
  perShard(): boolean;
  /** The endpoint refused a call across slots: batch per shard from now on. */
  enforcesSlots(): void;
}

type LedgerCommands = Record<"streamkeeperLedger" | "streamkeeperAdmit" | "streamkeeperFinish", (...args: Array<string | number | Buffer>) => Promise<unknown>>;

/**
 * How the ledger's calls reach Redis (event-ledger.ts). The calls of one turn go in one
 * script call (a batch); on a cluster one per shard, since a script reaches one slot. A
 * single endpoint may enforce slots as well (a proxy in front of a cluster, or a cluster
 * node reached directly): it answers CROSSSLOT to a batch across shards, and from then on
 * the ledger batches per shard there too.
 */
export function createLedgerTransport(redis: Redis | Cluster, gatherMs = 0): LedgerTransport {
  redis.defineCommand("streamkeeperLedger", { lua: ledgerScript });
  const commands = redis as unknown as LedgerCommands;
  let perShard = "isCluster" in redis && redis.isCluster;
  const run = async (command: keyof LedgerCommands, calls: LedgerCall[]): Promise<unknown[]> => {
    if (calls.length === 1) return [await commands[command](calls[0]!.keys.length, ...calls[0]!.keys, ...calls[0]!.args)];
    // The command's arguments in one array, filled in place: numkeys, every call's keys,
    // "batch", the count, then per call its key and argument counts and its arguments.
    const all: Array<string | number | Buffer> = [0];
    for (const call of calls) for (const key of call.keys) all.push(key);
    all[0] = all.length - 1;
    all.push("batch", calls.length);
    for (const call of calls) {
      all.push(call.keys.length, call.args.length);
      for (const arg of call.args) all.push(arg);
    }
    return (await commands[command](...all)) as unknown[];
  };
  const sendBatch = async (calls: LedgerCall[]) => {
    try {
      return await run("streamkeeperLedger", calls);
    } catch (error) {
      // Also a batch grouped before the switch: it is sent again per shard like the first.
      if (!String(error).includes("CROSSSLOT") || new Set(calls.map((call) => call.shard)).size === 1) throw error;
      perShard = true;
      const replies: unknown[] = [];
      const shards = new Map<number, number[]>();
      calls.forEach((call, index) => shards.set(call.shard, [...(shards.get(call.shard) ?? []), index]));
      await Promise.all(
        [...shards.values()].map(async (indexes) => (await run("streamkeeperLedger", indexes.map((index) => calls[index]!))).forEach((reply, k) => (replies[indexes[k]!] = reply))),
      );
      return replies;
    }
  };
  const groupOf = (call: LedgerCall) => (perShard ? String(call.shard) : "");
  const send = createCallBatcher<LedgerCall, unknown>(sendBatch, { groupOf });
  const gathered = gatherMs > 0 ? createCallBatcher<LedgerCall, unknown>(sendBatch, { groupOf, gatherMs }) : send;
  // Per shard, calls seldom meet within gatherMs among a cluster's shards: there, per turn.
  const sendGathered = (call: LedgerCall) => (perShard ? send(call) : gathered(call));
  // The admissions of one turn go in one script call too, and so do the completions.
  // Each defined on first use: a worker never admits, a receiver never completes a job.
  const perTurn = (command: "streamkeeperAdmit" | "streamkeeperFinish", lua: string) => {
    let batcher: CallBatcher<LedgerCall, unknown> | undefined;
    const call = (ledgerCall: LedgerCall) => {
      if (!batcher) {
        redis.defineCommand(command, { lua });
        batcher = createCallBatcher<LedgerCall, unknown>((calls) => run(command, calls));
      }
      return batcher(ledgerCall);
    };
    return Object.assign(call, { flush: async () => batcher?.flush() });
  };
  const admit = perTurn("streamkeeperAdmit", admissionScript);
  const finish = perTurn("streamkeeperFinish", finishScript);
  return {
    send,
    sendGathered,
    flush: async () => void (await Promise.all([send.flush(), gathered.flush(), admit.flush(), finish.flush()])),
    admit,
    finish,
    perShard: () => perShard,
    enforcesSlots: () => void (perShard = true),
  };
}
