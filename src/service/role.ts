/** Which parts a process runs: `receiver` takes webhooks, `worker` delivers and recovers, `all` does both. */
export type Role = "all" | "receiver" | "worker";
