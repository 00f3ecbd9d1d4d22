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
  // Every temporary folder of the run (test files, the processes they start) goes under one
  // folder of its own, removed at the end: a test that forgets its own leaves nothing behind.
  const previousTmp = process.env.TMPDIR;
  const runTmp = await mkdtemp(join(tmpdir(), "sk-run-"));
  process.env.TMPDIR = runTmp;
  const dir = await mkdtemp(join(tmpdir(), "sk-redis-"));
  const redis = await startRedisServer({ dir, appendOnly: false });
  project.provide("redisUrl", redis.url);
  return async () => {
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
    if (previousTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previousTmp;
    await rm(runTmp, { recursive: true, force: true });
  };
}
