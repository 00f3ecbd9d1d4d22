import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import type {} from "vitest";
import { startRedisServer } from "../../src/queue/redis-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/** One throwaway redis-server for the whole run; each test file uses its own queue prefix. */
export default async function setup(project: TestProject) {
  const dir = await mkdtemp(join(tmpdir(), "sk-redis-"));
  const redis = await startRedisServer({ dir, appendOnly: false });
  project.provide("redisUrl", redis.url);
  return async () => {
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
