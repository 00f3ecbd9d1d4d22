import type { Config } from "../config.js";
import { adminUrlOf } from "./service-client.js";

/** After `reconcile --no-wait`: the one line that says how to follow the printed job ids. */
export function followReconcileJobsHint(config: Config): string {
  return `follow each job with: curl -H "Authorization: Bearer $ADMIN_TOKEN" ${adminUrlOf(config.env)}/admin/reconcile/<job-id>`;
}
