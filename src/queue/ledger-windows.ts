import { ledgerBucketKey } from "./queue-names.js";

/** The keys one ledger op is sent: its shard's window of buckets, and on a cluster their dictionaries. */
export type LedgerWindowKeys = (shard: number, newestBucket: number, op: string, declareDictionaries: boolean) => string[];

/**
 * A shard's window of `bucketCount` buckets, newest first (a `markNewest`: the newest
 * alone): the same all day, so built once a day per shard. On a single Redis the script
 * builds each bucket's dictionary key from the bucket's; a cluster, where every key a
 * script writes is declared so that a slot's migration guards it, is sent the dictionaries
 * after the buckets (ledger-core.lua). A lookup reads no dictionary; an admission or a
 * job's finish never runs on a cluster.
 */
export function createLedgerWindows(queuePrefix: string, bucketCount: number): LedgerWindowKeys {
  type Window = { newest: number; buckets: string[]; newestOnly: string[]; all: string[]; newestWithNames: string[] };
  const windows = new Map<number, Window>();
  const names = (key: string) => `${key}:names`;
  return (shard, newest, op, declareDictionaries) => {
    let known = windows.get(shard);
    if (known?.newest !== newest) {
      const buckets = Array.from({ length: bucketCount }, (_, i) => ledgerBucketKey(queuePrefix, shard, newest - i));
      known = { newest, buckets, newestOnly: [buckets[0]!], all: [...buckets, ...buckets.map(names)], newestWithNames: [buckets[0]!, names(buckets[0]!)] };
      windows.set(shard, known);
    }
    const declared = declareDictionaries && op !== "lookup" && op !== "admit";
    if (op === "markNewest") return declared ? known.newestWithNames : known.newestOnly;
    return declared ? known.all : known.buckets;
  };
}
