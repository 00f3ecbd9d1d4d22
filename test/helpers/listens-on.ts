import { readdir, readFile, readlink } from "node:fs/promises";

/**
 * Whether process `pid` holds the listening TCP socket of `port` (Linux: /proc/net/tcp and
 * tcp6, then the process's descriptors). A port found free can be bound by another test's
 * process first: its /readyz would answer for ours. True where /proc cannot tell (not Linux).
 */
export async function listensOn(pid: number, port: number): Promise<boolean> {
  const tables = await Promise.all(["/proc/net/tcp", "/proc/net/tcp6"].map((path) => readFile(path, "utf8").catch(() => undefined)));
  if (tables.every((table) => table === undefined)) return true;
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const inodes = new Set<string>();
  for (const line of tables.flatMap((table) => table?.split("\n").slice(1) ?? [])) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    const fields = line.trim().split(/\s+/);
    if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === "0A") inodes.add(fields[9]!);
  }
  if (inodes.size === 0) return false;
  const descriptors = await readdir(`/proc/${pid}/fd`).catch(() => []);
  for (const descriptor of descriptors) {
    const target = await readlink(`/proc/${pid}/fd/${descriptor}`).catch(() => "");
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode && inodes.has(inode)) return true;
  }
  return false;
}
