import { adminTokenFile } from "../credentials/admin-token.js";
import type { ClientEnv } from "../config/config.js";
import { adminUrlOf } from "./service-client.js";

/** After `reconcile --no-wait`: the one line that says how to follow the printed job ids, with the token where this shell has it. */
export function followReconcileJobsHint(env: ClientEnv): string {
  const token = env.ADMIN_TOKEN === undefined ? `$(cat ${adminTokenFile(env.DATA_DIR)})` : "$ADMIN_TOKEN";
  return `follow each job with: curl -H "Authorization: Bearer ${token}" ${adminUrlOf(env)}/admin/reconcile/<job-id>`;
}
