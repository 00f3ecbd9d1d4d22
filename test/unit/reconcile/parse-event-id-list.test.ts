import { describe, expect, it } from "vitest";
import { parseEventIdList } from "../../../src/reconcile/parse-event-id-list.js";

describe("parseEventIdList", () => {
  it("when a file has blank lines, comments and CRLF endings, then only the ids remain", () => {
    const text = "# failed last night\r\nevt_q273LFcsfrNovuzswy8qBz\r\n\r\n  evt_7PhFNYbTW8At5NiLxgUn4D  # retried\n#evt_commented0000000000000\n";
    expect(parseEventIdList(text, "ids.txt")).toEqual(["evt_q273LFcsfrNovuzswy8qBz", "evt_7PhFNYbTW8At5NiLxgUn4D"]);
  });

  it("when a line holds two ids, then the error names the file and the line", () => {
    expect(() => parseEventIdList("evt_a\nevt_b evt_c\n", "ids.txt")).toThrow('ids.txt line 2: "evt_b evt_c" is not one event id; put one id per line');
  });
});
