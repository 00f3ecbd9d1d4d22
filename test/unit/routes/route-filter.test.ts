import { describe, expect, it } from "vitest";
import { compileFilter, FilterError, filterOperators } from "../../../src/routes/route-filter.js";
import { userEvent } from "../../helpers/fixtures.js";

const allowed = "use $eq $ne $in $nin $exists $regex $gt $gte $lt $lte $and $or $nor $not $size $all $elemMatch";

/** A route's filter compiled (routes/route-filter.ts): the operators it refuses wherever they hide, in our words. */
describe("a route's filter", () => {
  it("when an operator outside the list hides in a list or below another operator, then the filter is refused naming it", () => {
    expect(() => compileFilter({ $or: [{ type: "user.created" }, { "data.object.email": { $where: "true" } }] })).toThrow(new FilterError(`unknown operator $where; ${allowed}`));
    expect(() => compileFilter({ "data.object.logins": { $elemMatch: { country: { $expr: 1 } } } })).toThrow(new FilterError(`unknown operator $expr; ${allowed}`));
    expect(() => compileFilter({ "data.object.roles": { $all: [{ $function: 1 }] } })).toThrow(new FilterError(`unknown operator $function; ${allowed}`));
  });

  it("when a filter uses every listed operator, $options included, then it compiles and tests the event", () => {
    const event = userEvent();
    (event.data as { object: Record<string, unknown> }).object.plan = null;
    expect(filterOperators).toContain("$options");
    expect(compileFilter({ "data.object.email": { $regex: "^NICK", $options: "i" } })(event)).toBe(true);
    expect(compileFilter({ "data.object.email": { $regex: "^NICK" } })(event)).toBe(false);
    // A field whose name holds a $ past its start is a field, not an operator; a null value is a value.
    expect(compileFilter({ "data.object.a$b": { $exists: false }, "data.object.plan": null })(event)).toBe(true);
  });

  it("when mingo refuses the query, then the error says it is not a query, with mingo's reason", () => {
    expect(() => compileFilter({ $and: { type: "user.created" } })).toThrow(new FilterError("not a query: $and expects value to be an Array."));
  });
});
