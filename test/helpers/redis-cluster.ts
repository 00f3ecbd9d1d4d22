import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort, startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";
import { retryOnTakenPort } from "./retry-on-taken-port.js";
import { until } from "./until.js";

export interface RedisClusterHandle {
  /** `redis+cluster://127.0.0.1:<p1>,127.0.0.1:<p2>,127.0.0.1:<p3>`: what REDIS_URL takes. */
  url: string;
  /** The running nodes, by index; `restart` replaces an entry. */
  nodes: RedisServer[];
  /** Starts node `index` again on its port, dir and bus port (after a `nodes[index].kill()`): it rejoins with its slots and data. */
  restart(index: number): Promise<void>;
  /** The index in `nodes` of the node that serves a key's hash slot. */
  nodeOf(key: string): Promise<number>;
  /** Stops every node and removes the temp dir. */
  stop(): Promise<void>;
}

const slotCount = 16384;

/**
 * A local Redis Cluster of `size` masters and no replicas, from `redis-server` on PATH,
 * on free ports in a temp dir. Slots are split evenly with CLUSTER ADDSLOTSRANGE and the
 * nodes introduced with CLUSTER MEET (what `redis-cli --cluster create` does, without its
 * one-second polling). Resolves once every node reports cluster_state:ok.
 */
export async function startRedisCluster(size = 3): Promise<RedisClusterHandle> {
  const dir = await mkdtemp(join(tmpdir(), "sk-cluster-"));
  const nodes: RedisServer[] = [];
  const busPorts: number[] = [];
  const admins: Redis[] = [];
  // The append-only file and nodes.conf stay in the node's dir, so a restarted node keeps its data and slots.
  const startNodeOnce = (index: number, port?: number) =>
    startRedisServer({
      dir: join(dir, `node-${index}`),
      port,
      appendOnly: true,
      extraArgs: [
        "--cluster-enabled", "yes",
        "--cluster-config-file", join(dir, `node-${index}`, "nodes.conf"),
        "--cluster-port", String(busPorts[index]),
        "--cluster-node-timeout", "5000",
      ],
    });
  // A bus port found free may be taken (by a parallel test) before the node binds it: pick
  // another with the next try (a node started again on its own port keeps its bus port).
  const startNode = (index: number, port?: number) =>
    port !== undefined
      ? startNodeOnce(index, port)
      : retryOnTakenPort(async () => {
          busPorts[index] = await freePort();
          return startNodeOnce(index);
        });
  try {
    for (let index = 0; index < size; index++) {
      // The bus port defaults to port + 10000, which may be taken or above 65535: startNode picks it too.
      nodes.push(await startNode(index));
    }
    for (const node of nodes) admins.push(new Redis(node.port, "127.0.0.1", { maxRetriesPerRequest: 1 }));

    for (const [index, admin] of admins.entries()) {
      const first = Math.floor((slotCount * index) / size);
      const last = Math.floor((slotCount * (index + 1)) / size) - 1;
      await admin.call("CLUSTER", "ADDSLOTSRANGE", first, last);
      await admin.call("CLUSTER", "SET-CONFIG-EPOCH", index + 1);
    }
    for (let index = 1; index < size; index++) {
      await admins[0]!.call("CLUSTER", "MEET", "127.0.0.1", nodes[index]!.port, busPorts[index]!);
    }

    let infos: string[] = [];
    await until(
      "the Redis Cluster formed",
      async () => (infos = await Promise.all(admins.map((admin) => admin.call("CLUSTER", "INFO") as Promise<string>))).every((info) => info.includes("cluster_state:ok") && info.includes(`cluster_known_nodes:${size}`)),
      { withinMs: 20_000, everyMs: 50, detail: () => infos.join(" | ") },
    );
  } catch (error) {
    await Promise.all(nodes.map((node) => node.kill()));
    await rm(dir, { recursive: true, force: true });
    throw error;
  } finally {
    for (const admin of admins) admin.disconnect();
  }

  return {
    url: `redis+cluster://${nodes.map((node) => `127.0.0.1:${node.port}`).join(",")}`,
    nodes,
    async restart(index) {
      nodes[index] = await startNode(index, nodes[index]!.port);
    },
    async nodeOf(key) {
      const admin = new Redis(nodes[0]!.port, "127.0.0.1", { maxRetriesPerRequest: 1 });
      try {
        const slot = Number(await admin.call("CLUSTER", "KEYSLOT", key));
        const ranges = (await admin.call("CLUSTER", "SLOTS")) as Array<[number, number, [string, number]]>;
        const [, , [, port]] = ranges.find(([first, last]) => first <= slot && slot <= last)!;
        return nodes.findIndex((node) => node.port === port);
      } finally {
        admin.disconnect();
      }
    },
    async stop() {
      await Promise.all(nodes.map((node) => node.stop()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
