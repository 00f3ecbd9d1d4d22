import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/emulator/api-error.js";
import { paginate } from "../../../src/emulator/paginate.js";

const items = ["a", "b", "c", "d", "e"].map((id) => ({ id }));

describe("paginate", () => {
  it("when walked with `next`, then every item comes once, in order, and the last page has no `next`", () => {
    const seen: string[] = [];
    let from: string | undefined;
    let pages = 0;
    do {
      const page = paginate(items, from, 2);
      seen.push(...page.items.map((item) => item.id));
      from = page.next;
      pages++;
    } while (from);
    expect(seen).toEqual(["a", "b", "c", "d", "e"]);
    expect(pages).toBe(3);
    expect(paginate(items, undefined, 5)).toEqual({ items });
  });

  it("when the cursor is garbled or names nothing, then a 400 naming `from`", () => {
    for (const cursor of ["garbage", Buffer.from("c1:zzz").toString("base64url")]) {
      expect(() => paginate(items, cursor, 2)).toThrow(ApiError);
      expect(() => paginate(items, cursor, 2)).toThrow(/on property from/);
    }
  });
});
