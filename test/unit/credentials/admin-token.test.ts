import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { adminTokenFile, readAdminTokenFile, resolveAdminToken } from "../../../src/credentials/admin-token.js";
import { ConfigError } from "../../../src/config/config.js";

describe("the admin token", () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "sk-admin-token-"));
  });
  afterEach(() => rm(dataDir, { recursive: true, force: true }));

  it("when ADMIN_TOKEN is unset, then one token is generated into DATA_DIR/admin-token (mode 0600), and every later start reads the same one", async () => {
    const first = await resolveAdminToken({ ADMIN_TOKEN: undefined, DATA_DIR: dataDir });
    const file = join(dataDir, "admin-token");
    expect(first).toEqual({ token: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/), file });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, "utf8")).toBe(`${first.token}\n`);
    expect(await resolveAdminToken({ ADMIN_TOKEN: undefined, DATA_DIR: dataDir })).toEqual(first);
    expect(readAdminTokenFile(file)).toBe(first.token);
  });

  it("when processes start at once on one DATA_DIR, then they all get the one token written", async () => {
    const tokens = await Promise.all(Array.from({ length: 8 }, () => resolveAdminToken({ ADMIN_TOKEN: undefined, DATA_DIR: dataDir })));
    expect(new Set(tokens.map((token) => token.token)).size).toBe(1);
    expect(await readFile(adminTokenFile(dataDir), "utf8")).toBe(`${tokens[0]!.token}\n`);
    // Written whole, then linked into place: no temporary file left behind.
    expect(await readdir(dataDir)).toEqual(["admin-token"]);
  });

  it("when ADMIN_TOKEN is set, then it wins over a token file, which stays as it was; with no file, none is written", async () => {
    await writeFile(adminTokenFile(dataDir), "from-the-file\n", { mode: 0o600 });
    expect(await resolveAdminToken({ ADMIN_TOKEN: "from-the-environment", DATA_DIR: dataDir })).toEqual({ token: "from-the-environment" });
    expect(await readFile(adminTokenFile(dataDir), "utf8")).toBe("from-the-file\n");
    const empty = join(dataDir, "fresh");
    await resolveAdminToken({ ADMIN_TOKEN: "from-the-environment", DATA_DIR: empty });
    expect(readAdminTokenFile(adminTokenFile(empty))).toBeUndefined();
  });

  it("when the file is empty or damaged, then the start stops with a ConfigError naming the file and what to do", async () => {
    const file = adminTokenFile(dataDir);
    for (const text of ["", "\n", "two words\n", "one\ntwo\n"]) {
      await writeFile(file, text);
      const error = await resolveAdminToken({ ADMIN_TOKEN: undefined, DATA_DIR: dataDir }).catch((caught: unknown) => caught);
      expect(error, JSON.stringify(text)).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} (is empty|does not hold an admin token \\(one line of printable characters\\)): delete it, and the next start generates a new one`));
      expect(await readFile(file, "utf8")).toBe(text);
    }
  });
});
