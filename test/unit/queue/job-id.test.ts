import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { jobIdFor, replayJobIdFor } from "../../../src/queue/job-id.js";
import { legacyJobIdFor } from "../../../src/upgrade/legacy-job-id.js";

const hashed = (id: string) => `h-${createHash("sha256").update(id).digest("hex").slice(0, 40)}`;

describe("jobIdFor", () => {
  it("when an id is plain, then it is its own job id, as before", () => {
    expect(jobIdFor("evt_38ANnv8pQhqsZrX2VFbftv")).toBe("evt_38ANnv8pQhqsZrX2VFbftv");
    expect(legacyJobIdFor("evt_38ANnv8pQhqsZrX2VFbftv")).toBe("evt_38ANnv8pQhqsZrX2VFbftv");
  });

  it("when an id has a colon or is all digits, then it is hashed, as before", () => {
    expect(jobIdFor("evt:collide:1795613757")).toBe(hashed("evt:collide:1795613757"));
    expect(jobIdFor("12345")).toBe(hashed("12345"));
  });

  it("when an id is shaped like a hashed or replay job id, then it is hashed, so no two ids share a job", () => {
    const other = "evt:collide:1795613757";
    const lookalike = hashed(other);
    expect(jobIdFor(lookalike)).not.toBe(jobIdFor(other));
    expect(jobIdFor(lookalike)).toBe(hashed(lookalike));
    const replayLike = replayJobIdFor("evt_a", 1_700_000_000_000);
    expect(jobIdFor(replayLike)).not.toBe(replayLike);
    expect(legacyJobIdFor(lookalike)).toBe(lookalike);
  });

  it("when ids differ in one code point, then their job ids differ", () => {
    expect(jobIdFor("evt_\ufffd_1")).not.toBe(jobIdFor("evt_\ufffe_1"));
  });
});
