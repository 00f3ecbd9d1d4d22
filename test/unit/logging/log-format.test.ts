import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { logFormatOf } from "../../../src/logging/logger.js";

const run = promisify(execFile);
const logger = join(import.meta.dirname, "../../../src/logging/logger.ts");

/** A process that logs one entry with secrets through the service's logger, its stdout a pipe. */
async function logged(format: string): Promise<string> {
  const script = `const { createLogger } = await import(${JSON.stringify(logger)});
createLogger("info", undefined, ${JSON.stringify(format)}).warn({ req: { headers: { authorization: "Bearer sekrit-bearer" } }, config: { password: "sekrit-password" }, route: "crm" }, "delivery failed");`;
  const { stdout } = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script]);
  return stdout;
}

describe("LOG_FORMAT", () => {
  it("when LOG_FORMAT is unset, then a terminal gets pretty lines and anything else JSON lines; set, it wins", () => {
    expect(logFormatOf(undefined, true)).toBe("pretty");
    expect(logFormatOf(undefined, false)).toBe("json");
    expect(logFormatOf("json", true)).toBe("json");
    expect(logFormatOf("pretty", false)).toBe("pretty");
  });

  it("when the format is pretty, then an entry is one readable line with local time, its fields after, secrets redacted", async () => {
    const stdout = await logged("pretty");
    expect(stdout).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] WARN: delivery failed \{.*"route":"crm".*\}\n$/);
    expect(stdout).toContain("[redacted]");
    expect(stdout).not.toContain("sekrit");
  });

  it("when the format is json, then an entry is one JSON line, secrets redacted", async () => {
    const stdout = await logged("json");
    expect(JSON.parse(stdout)).toMatchObject({ level: 40, msg: "delivery failed", route: "crm", config: { password: "[redacted]" } });
    expect(stdout).not.toContain("sekrit");
  });
});
