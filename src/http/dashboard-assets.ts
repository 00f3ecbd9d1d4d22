import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import express, { type Router } from "express";

/** Where the queue dashboard's page loads its scripts, styles and translations (dashboard-router.ts mounts the page at /admin/queues). */
export const dashboardAssetsPath = "/admin/queues/static";

/**
 * The queue dashboard's static files (bull-board's UI package: scripts, styles, images,
 * translations), served without the admin login. They are the same in every install and
 * hold no data; the page, its API and every write stay behind the login. A browser opened
 * on a URL with the credentials in it sends them for the page and its scripts but not for
 * the page's own fetch of its translations, which then answered 401 and left the page
 * showing raw keys (MENU.QUEUES) (docs/operating.md, The queue dashboard).
 */
export function createDashboardAssets(): Router {
  // The package bull-board's own adapter serves them from (it resolves it the same way).
  const ui = dirname(createRequire(import.meta.url).resolve("@bull-board/ui/package.json"));
  const router = express.Router();
  router.use(dashboardAssetsPath, express.static(join(ui, "dist", "static"), { fallthrough: false, index: false }));
  return router;
}
