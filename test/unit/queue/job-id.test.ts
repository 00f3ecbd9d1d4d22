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

  it("when an id only starts or ends with digits, or holds one character BullMQ refuses anywhere in it, then the first is its own job id and the second is hashed, by either rule", () => {
    for (const plain of ["123abc", "abc123", "abc"]) {
      expect(jobIdFor(plain)).toBe(plain);
      expect(legacyJobIdFor(plain)).toBe(plain);
    }
    for (const refused of ["12", "7", "a:b", ":ab", "ab:", "a".repeat(129)]) {
      expect(jobIdFor(refused)).toBe(hashed(refused));
      expect(legacyJobIdFor(refused)).toBe(hashed(refused));
    }
    expect(jobIdFor("a".repeat(128))).toBe("a".repeat(128));
  });

  it("when an id only looks partly like a hashed one (the prefix alone, or the hash not at its start), then it is its own job id", () => {
    const hex40 = "0123456789abcdef0123456789abcdef01234567";
    for (const plain of ["h-a", "h-", `x-h-${hex40}`, `xh-${hex40}`]) expect(jobIdFor(plain)).toBe(plain);
    expect(jobIdFor(`h-${hex40}`)).toBe(hashed(`h-${hex40}`));
  });
});

describe("replayJobIdFor", () => {
  it("when an event is replayed at two moments, then each replay has a job id of its own, neither the first delivery's, and each one BullMQ takes as it is", () => {
    const [first, second] = [replayJobIdFor("evt_a", 1_700_000_000_000), replayJobIdFor("evt_a", 1_700_000_000_001)];
    expect(new Set([first, second, jobIdFor("evt_a")]).size).toBe(3);
    for (const id of [first, second]) {
      expect(id.startsWith("evt_a")).toBe(true);
      expect(id).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
      expect(id).not.toMatch(/^\d+$/);
    }
    expect(replayJobIdFor("a:b", 1)).toContain(hashed("a:b"));
  });
});
