import type { NextFunction, Request, Response } from "express";
import { sendProblem } from "./problem.js";

const reads = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Refuses a write to the admin API sent by a page of another site. A browser logged in
 * to the operator view sends its Basic credentials with any request to this address, a
 * form's POST from elsewhere included, and a POST with no body (`streams connect`) needs
 * no JSON to pass. The browser says where such a request comes from (`Sec-Fetch-Site`,
 * `Origin`); the CLI and API clients send neither, and the operator view's own requests
 * come from this address.
 */
export function refuseCrossSite(req: Request, res: Response, next: NextFunction) {
  if (reads.has(req.method)) return next();
  const site = req.headers["sec-fetch-site"];
  const origin = req.headers.origin;
  const fromElsewhere = (site !== undefined && site !== "same-origin" && site !== "none") || (origin !== undefined && hostOf(origin) !== req.headers.host);
  if (!fromElsewhere) return next();
  sendProblem(res, 403, `a write to the admin API from a page of another site (Origin ${origin ?? "not given"}) is refused: send it with the streamkeeper CLI or an API client, or from the operator view at this address`);
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}
