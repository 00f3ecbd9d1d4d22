import { fileURLToPath } from "node:url";
import express, { type Router } from "express";
import type { Overview } from "../admin/describe-overview.js";

/**
 * The page's files, in the repository's web/admin/ (two folders up from this module both
 * in src/http/ and in dist/http/, and shipped in the npm package): plain HTML, CSS and one
 * script, served as they are; no build step, nothing from the internet.
 */
const pageDir = fileURLToPath(new URL("../../web/admin/", import.meta.url));
const pageFiles = new Map([
  ["/", "index.html"],
  ["/index.html", "index.html"],
  ["/operator-view.js", "operator-view.js"],
  ["/operator-view.css", "operator-view.css"],
]);

/**
 * The operator view (docs/operating.md#the-operator-view; docs/operating.md): the page at `/admin/`
 * and its one aggregate, `GET /admin/overview`. Behind the admin login like every /admin
 * route (admin-auth.ts); the page's other calls go to the admin API as it is.
 */
export function createOperatorViewRouter(overview: () => Promise<Overview>): Router {
  const router = express.Router();

  router.get("/overview", async (_req, res) => {
    res.set("cache-control", "no-store").json(await overview());
  });

  router.get([...pageFiles.keys()], (req, res) => {
    // The page's links are relative to /admin/: /admin without the slash would lose them.
    if (req.path === "/" && !req.originalUrl.split("?")[0]!.endsWith("/")) return res.redirect(308, `${req.originalUrl.split("?")[0]}/`);
    res.set({
      "cache-control": "no-cache",
      // Its own files and the admin API only: no inline script, no other origin.
      "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      "x-content-type-options": "nosniff",
    });
    res.sendFile(pageFiles.get(req.path)!, { root: pageDir });
  });

  return router;
}
