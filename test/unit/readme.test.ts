import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { settingsTable } from "../../src/config/settings-table.js";

describe("README", () => {
  it("when settings change in config.ts, then the README's table must be updated with them", async () => {
    const readme = await readFile(join(import.meta.dirname, "../../README.md"), "utf8");
    expect(readme).toContain(settingsTable());
    expect(readme).toContain("npm install && npm test");
    expect(readme).toContain("npm install && npm start");
  });
});
