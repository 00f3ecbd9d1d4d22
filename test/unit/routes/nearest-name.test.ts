import { describe, expect, it } from "vitest";
import { nearestName } from "../../../src/routes/nearest-name.js";

describe("nearestName", () => {
  it("when a name is one or two edits from a candidate, then that candidate is the hint", () => {
    expect(nearestName("matches", ["name", "match", "url"])).toBe("match");
    expect(nearestName("usr.*", ["user.*", "group.*", "organization.*"])).toBe("user.*");
    expect(nearestName("timeoutms", ["timeoutMs", "concurrency"])).toBe("timeoutMs");
  });

  it("when several candidates are close, then the closest wins", () => {
    expect(nearestName("user.create", ["user.created", "user.deleted"])).toBe("user.created");
  });

  it("when nothing is close, then there is no hint", () => {
    expect(nearestName("retries", ["name", "match", "url", "headers"])).toBeUndefined();
    expect(nearestName("ab", ["xy"])).toBeUndefined();
  });
});
