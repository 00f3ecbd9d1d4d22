import { oldestInOutbox } from "../archive/archive-outbox.js";
import type { RunningArchive } from "../archive/start-archive.js";
import type { Config } from "../config/config.js";
import type { Cluster, Redis } from "ioredis";
import type { ArchiveOverview } from "./overview.js";

/** The archive's state for the operator view: off, up or down (and why), and how far its outbox is behind. */
export async function describeArchive(archive: RunningArchive | undefined, client: Redis | Cluster, env: Pick<Config["env"], "ARCHIVE" | "QUEUE_PREFIX">): Promise<ArchiveOverview> {
  if (!archive) {
    // On, but its embedded Postgres could not start: the events stored now are not archived.
    if (env.ARCHIVE === "off") return { state: "off", lagSeconds: null, detail: "ARCHIVE=off" };
    return { state: "down", lagSeconds: null, detail: "its embedded Postgres could not start (see the start log, or set ARCHIVE_DATABASE_URL)" };
  }
  const oldest = await oldestInOutbox(client, env.QUEUE_PREFIX);
  const lagSeconds = oldest ? Math.max(0, Math.round((Date.now() - oldest.addedAt) / 1000)) : 0;
  const refusedBy = archive.writer.refusedBy();
  if (refusedBy) return { state: "down", lagSeconds, detail: `this process's database is not the outbox's (${refusedBy})` };
  if (!archive.writer.available()) return { state: "down", lagSeconds, detail: "Postgres does not answer" };
  return { state: "up", lagSeconds, detail: null };
}
