import { describe, expect, it } from "vitest";
import { followReconcileJobsHint } from "../../../src/cli/follow-reconcile-jobs-hint.js";

describe("the hint after reconcile --no-wait", () => {
  const env = { ADMIN_URL: "http://127.0.0.1:9090", ADMIN_HOST: "127.0.0.1", ADMIN_PORT: 9090, DATA_DIR: "/srv/sk" };

  it("when the shell sets ADMIN_TOKEN, then the curl line reads it from there", () => {
    expect(followReconcileJobsHint({ ...env, ADMIN_TOKEN: "t" })).toBe('follow each job with: curl -H "Authorization: Bearer $ADMIN_TOKEN" http://127.0.0.1:9090/admin/reconcile/<job-id>');
  });

  it("when it does not, then the curl line reads the token the service generated in DATA_DIR", () => {
    expect(followReconcileJobsHint({ ...env, ADMIN_TOKEN: undefined })).toBe('follow each job with: curl -H "Authorization: Bearer $(cat /srv/sk/admin-token)" http://127.0.0.1:9090/admin/reconcile/<job-id>');
  });
});
