import type { Page } from "playwright-core";
import { expect } from "vitest";
import type { Overview } from "../../src/admin/describe-overview.js";
import { adminHeaders } from "./credentials.js";

/**
 * What the operator view's browser tests ask of the service and of its page: the overview
 * the page renders, how many refreshes the page made, and a page element's text. `target`
 * is read at each call (the service and page are made in a beforeAll).
 */
export function operatorViewProbe(target: () => { adminUrl: string; page: Page }, adminToken: string) {
  const overview = async () => (await (await fetch(`${target().adminUrl}/admin/overview`, { headers: adminHeaders(adminToken) })).json()) as Overview;
  const refreshes = async () => Number(await target().page.locator("body").getAttribute("data-refreshes"));
  return {
    overview,
    refreshes,
    /** Once the service shows `holds`, the page shows it after at most one refresh started after it. */
    async withinOneRefresh(holds: (seen: Overview) => boolean) {
      await expect.poll(async () => holds(await overview())).toBe(true);
      const seen = await refreshes();
      await expect.poll(refreshes).toBeGreaterThanOrEqual(seen + 2);
    },
    text: async (selector: string) => (await target().page.locator(selector).textContent()) ?? "",
  };
}
