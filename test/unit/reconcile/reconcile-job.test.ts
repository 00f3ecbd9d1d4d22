import { describe, expect, it } from "vitest";
import { isFailure, outcomeLabel, type ReconcileOutcome } from "../../../src/reconcile/reconcile-job.js";

describe("reconcile outcomes", () => {
  it("when an id ends in not_found, no_payload or an error, then the command fails (exit 1); otherwise it succeeds", () => {
    const failing: ReconcileOutcome[] = ["not_found", "no_payload", "error: the client needs read:event_deliveries"];
    const fine: ReconcileOutcome[] = ["recovered", "already_received", "not_failed"];
    expect(failing.map(isFailure)).toEqual([true, true, true]);
    expect(fine.map(isFailure)).toEqual([false, false, false]);
  });

  it("when an error outcome is counted, then its metric label drops the reason", () => {
    expect(outcomeLabel("error: rate limited")).toBe("error");
    expect(outcomeLabel("recovered")).toBe("recovered");
  });
});
