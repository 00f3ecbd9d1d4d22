import type { NextFunction, Request, Response } from "express";
import { adminAuthPrevious } from "../metrics/previous-credential-uses.js";
import { equalsCurrentOrPrevious } from "./check-credentials.js";
import { sendProblem } from "./problem.js";

/**
 * Guards /admin/*: `Authorization: Bearer <ADMIN_TOKEN>` for API clients, or HTTP Basic
 * with any user name and ADMIN_TOKEN as the password, so a browser can log in to the
 * dashboard. Without ADMIN_TOKEN the admin API is off.
 */
export function adminAuth(adminToken: string | undefined, previousToken?: string) {
  // ADMIN_PREVIOUS_TOKEN too while set: a rotation with no 401s (docs/operating.md).
  const isAdminToken = adminToken ? equalsCurrentOrPrevious(adminToken, previousToken, () => adminAuthPrevious.inc()) : undefined;
  return (req: Request, res: Response, next: NextFunction) => {
    if (!isAdminToken) return sendProblem(res, 403, "the admin API is off: set ADMIN_TOKEN to enable it");
    const header = req.headers.authorization ?? "";
    if (/^bearer /i.test(header) && isAdminToken(header.slice(7).trim())) return next();
    if (/^basic /i.test(header)) {
      const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
      const password = decoded.slice(decoded.indexOf(":") + 1);
      if (decoded.includes(":") && isAdminToken(password)) return next();
    }
    // The pages a person opens (the operator view at /admin/, the queue dashboard) ask the browser for a login.
    const browser = req.path.startsWith("/queues") || req.path === "/" || /^\/operator-view\.(css|js)$/.test(req.path);
    sendProblem(res, 401, "send Authorization: Bearer <ADMIN_TOKEN> (or HTTP Basic with ADMIN_TOKEN as the password)", {
      "WWW-Authenticate": browser ? 'Basic realm="streamkeeper admin", charset="UTF-8"' : 'Bearer realm="streamkeeper admin"',
    });
  };
}
