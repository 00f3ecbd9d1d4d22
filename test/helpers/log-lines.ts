/** One JSON log line of the service (pino): its level, message and whatever fields it has. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/**
 * The JSON log lines in a process's output so far, complete lines only: output read while
 * the process runs may end in the middle of a line (a pipe hands over what it has), and
 * that part is left for the next read instead of failing JSON.parse.
 */
export function logLines<T extends LogLine = LogLine>(output: string): T[] {
  return output
    .slice(0, output.lastIndexOf("\n") + 1)
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as T);
}

const listening = { public: "receiving webhooks", admin: "admin surface (metrics, probes, admin API) listening" } as const;

/**
 * The URL a service started with PORT=0 and ADMIN_PORT=0 logged for its public ingress or
 * its admin surface (LOG_LEVEL info or lower), or undefined while not logged yet. Ports 0
 * read back from the log leave no gap between choosing a port and binding it, where a test
 * file running beside this one could take it.
 */
export function loggedUrl(output: string, which: keyof typeof listening): string | undefined {
  const line = logLines(output).find((each) => each.msg === listening[which]);
  return typeof line?.url === "string" ? line.url : undefined;
}
