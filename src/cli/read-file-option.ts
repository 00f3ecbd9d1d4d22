import { readFile } from "node:fs/promises";
import { text as readStream } from "node:stream/consumers";
import { CliError } from "./cli-error.js";

/** The text of a `--file <path>` option, `-` for stdin; a file that cannot be read is exit 2 naming it. */
export async function readFileOption(path: string): Promise<string> {
  try {
    return path === "-" ? await readStream(process.stdin) : await readFile(path, "utf8");
  } catch (error) {
    throw new CliError(`--file ${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); check the path`, 2);
  }
}
