import type { ClientEnv } from "../config.js";
import { adminUrlOf } from "./service-client.js";

/** After `reconcile --no-wait`: the one line that says how to follow the printed job ids. */
export function followReconcileJobsHint(env: ClientEnv): string {
  return `follow each job with: curl -H "Authorization: Bearer $ADMIN_TOKEN" ${adminUrlOf(env)}/admin/reconcile/<job-id>`;
}
