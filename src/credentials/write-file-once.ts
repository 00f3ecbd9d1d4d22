import { randomBytes } from "node:crypto";
import { link, mkdir, unlink, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * Writes `text` to `file` (mode 0600) unless the file exists; true when this call wrote it.
 * Written whole to a file of its own, then linked into place: a crash never leaves a
 * half-written file, and of two processes starting at once, the one whose link fails
 * reads the winner's file instead of overwriting it.
 */
export async function writeFileOnce(file: string, text: string): Promise<boolean> {
  await mkdir(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(temporary, text, { mode: 0o600, flag: "wx" });
  try {
    await link(temporary, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return false;
  } finally {
    await unlink(temporary).catch(() => {});
  }
}
