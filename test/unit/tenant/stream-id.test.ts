import { describe, expect, it } from "vitest";
import { streamIdProblem } from "../../../src/tenant/stream-id.js";

describe("streamIdProblem", () => {
  it("when the id is est_ and 22 letters or digits, then there is no problem", () => {
    expect(streamIdProblem("est_aD5AUDqZbHFcMoEx2LxAk9")).toBeUndefined();
  });

  it("when the id is short, has another prefix or other characters, then the problem says what a stream id looks like", () => {
    for (const id of ["est_short", "evt_7PhFNYbTW8At5NiLxgUn4D", "x".repeat(26), "est_aD5AUDqZbHFcMoEx2LxA-9", " est_aD5AUDqZbHFcMoEx2LxAk9"]) {
      expect(streamIdProblem(id)).toBe(`must be a stream id such as est_aD5AUDqZbHFcMoEx2LxAk9 (est_ and 22 letters or digits, 26 characters), got ${JSON.stringify(id)}`);
    }
  });
});
