import jsonata from "jsonata";
import { describe, expect, it } from "vitest";
import { compileObjectOfPaths } from "../../../src/routes/object-of-paths.js";
import { compileTransform } from "../../../src/routes/route-transform.js";

/** A small seeded generator (mulberry32), so a failure names an event that can be made again. */
function randomFrom(seed: number) {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const names = ["data", "object", "email", "user_id", "identities", "provider", "context", "plan", "app_metadata", "x", "__proto__", "_jsonata_function", "1", "a b"];

/** Any JSON value, with the field names the expressions below ask for, and arrays (of arrays) of everything. */
function jsonValue(random: () => number, depth: number): unknown {
  const pick = random();
  if (depth <= 0 || pick < 0.2) return [null, true, false, 0, 7.5, "", "s", "auth0"][Math.floor(random() * 8)];
  if (pick < 0.45) return Array.from({ length: Math.floor(random() * 4) }, () => jsonValue(random, depth - 1));
  const object: Record<string, unknown> = {};
  for (let count = Math.floor(random() * 5); count > 0; count--) {
    const name = names[Math.floor(random() * names.length)]!;
    // JSON.parse makes "__proto__" an own field, as an event from the wire has it.
    Object.defineProperty(object, name, { value: name === "_jsonata_function" ? random() < 0.5 : jsonValue(random, depth - 1), enumerable: true, writable: true, configurable: true });
  }
  return object;
}

/** A CloudEvent-like object whose `data` is anything. */
function randomEvent(random: () => number): object {
  return JSON.parse(JSON.stringify({ id: "evt_1", type: "user.updated", data: { object: jsonValue(random, 4), context: jsonValue(random, 2) }, x: jsonValue(random, 3) })) as object;
}

const expressions = [
  '{"email": data.object.email, "externalId": data.object.user_id, "updatedAt": data.object.updated_at, "data": {"context": data.context}}',
  '{"providers": data.object.identities.provider, "plan": data.object.app_metadata.plan, "kind": "contact", "n": 1, "t": true, "none": null}',
  '{"all": data, "x": x, "deep": x.x.x.x, "arrays": data.object.x.x, "proto": data.object.__proto__, "flag": data.object._jsonata_function}',
  '{"1": data.object.`1`, "a b": data.object.`a b`, "0": x, "__proto__": data.context, "nested": {"again": {"object": data.object}}}',
  "data.object",
  "data.object.identities",
  "x.x",
  '"a constant"',
  "{}",
];

describe("compileObjectOfPaths", () => {
  it.each(expressions)("when %s is evaluated over 2,000 generated events, then it gives jsonata's result every time", async (expression) => {
    const compiled = jsonata(expression);
    const objectOfPaths = compileObjectOfPaths(compiled.ast())!;
    expect(objectOfPaths).toBeDefined();
    const random = randomFrom(expressions.indexOf(expression) + 1);
    for (let index = 0; index < 2_000; index++) {
      const event = randomEvent(random);
      const expected = JSON.stringify(await compiled.evaluate(event));
      expect(JSON.stringify(objectOfPaths(event)), `event ${index}: ${JSON.stringify(event)}`).toBe(expected);
    }
  });

  it.each([
    '{"a": data[0]}',
    '{"a": data.object[email = "x"]}',
    '{"a": $.data}',
    '{"a": data.*}',
    '{"a": data.object.email & "!"}',
    '{"a": $string(data)}',
    '{"a": -data}',
    '{"a": [data]}',
    '{"a": data.{"b": object}}',
    '{data.object.email: data}',
    '{"a": 1, "a": 2}',
    '{"_jsonata_lambda": 1}',
    'data{"a": object}',
    '{"a": data.object.email}[0]',
    "`data`.object",
    "data.object.email ? 1 : 2",
  ])("when the transform is %s, then it is left to jsonata", (expression) => {
    const ast = jsonata(expression).ast();
    // A backtick name parses as a plain name: the one case here that is ours.
    if (expression === "`data`.object") expect(compileObjectOfPaths(ast)).toBeDefined();
    else expect(compileObjectOfPaths(ast)).toBeUndefined();
  });

  it("when an object is nested deeper than jsonata's stack guardrail allows, then jsonata evaluates it and says so", async () => {
    const expression = `${'{"a": '.repeat(1_100)}1${"}".repeat(1_100)}`;
    expect(compileObjectOfPaths(jsonata(expression).ast())).toBeUndefined();
    await expect(Promise.resolve().then(() => compileTransform(expression, 1_000)({}))).rejects.toThrow(/failed: .*D1011/);
  });
});
