import { resolve } from "node:path";
import { ConfigError } from "./config.js";

const unusable = new Set(["EACCES", "EPERM", "EROFS", "ENOTDIR", "EISDIR", "ENOSPC"]);

/**
 * A DATA_DIR this process cannot use is a setting to change (exit 2), not a failure of the
 * service: the error names the folder, what it was for and the setting that does without
 * it. Any other error passes through as it was.
 */
export function dataDirProblem(dataDir: string, doing: string, instead: string) {
  return (error: NodeJS.ErrnoException): never => {
    // A program that cannot be run (`spawn redis-server` EACCES) is not the folder's fault.
    if (error instanceof ConfigError || !unusable.has(error.code ?? "") || error.syscall?.startsWith("spawn")) throw error;
    throw new ConfigError([`DATA_DIR ${resolve(dataDir)} cannot be used to ${doing} (${error.code}): give a folder this user can write, or ${instead}`]);
  };
}
