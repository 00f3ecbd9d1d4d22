import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Page } from "playwright-core";
import type { Cleanup } from "./cleanup.js";

export const chromiumPath = "/usr/bin/chromium";

/**
 * A headless Chromium page, 1400×1000, recording every console error, page error and failed
 * request (status 400 or more) in `consoleErrors`. `login`: the HTTP Basic login the browser
 * answers the admin port's challenge with; without it, only what the URL carries.
 */
export async function openChromium(cleanup: Cleanup, consoleErrors: string[], login?: { username: string; password: string }): Promise<Page> {
  const userDataDir = await mkdtemp(join(tmpdir(), "sk-chromium-"));
  cleanup.push(() => rm(userDataDir, { recursive: true, force: true }));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    ...(login ? { httpCredentials: login } : {}),
    viewport: { width: 1400, height: 1000 },
  });
  cleanup.push(() => context.close());
  const page = await context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(`${message.text()} (${message.location().url})`);
  });
  page.on("pageerror", (error) => consoleErrors.push(error.message));
  page.on("response", (response) => {
    if (response.status() >= 400) consoleErrors.push(`${response.status()} ${response.url()}`);
  });
  // A cold Chromium on a loaded 2-core machine can take a while.
  page.setDefaultTimeout(30_000);
  return page;
}
