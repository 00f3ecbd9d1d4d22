import jsonata from "jsonata";
import { describe, expect, it } from "vitest";
import { createBodyShaper } from "../../../src/dispatch/shape-body.js";
import { compileTransform, TransformError } from "../../../src/routes/route-transform.js";
import { userEvent } from "../../helpers/fixtures.js";

describe("compileTransform", () => {
  it("when the transform is an object of paths and the event an object, then the body is there at once, as jsonata's result would be", async () => {
    const expression = '{"email": data.object.email, "ids": data.object.identities.user_id, "data": {"context": data.context}}';
    const event = { data: { object: { email: "a@example.com", identities: [{ user_id: "1" }, { user_id: "2" }] }, context: { sent: 1 } } };
    const body = compileTransform(expression, 100)(event);
    expect(body).toBe(JSON.stringify(await jsonata(expression).evaluate(event)));
    expect(body).toBe('{"email":"a@example.com","ids":["1","2"],"data":{"context":{"sent":1}}}');
  });

  it("when an object of paths selects nothing, then it is the same TransformError jsonata's result gives", () => {
    expect(() => compileTransform("data.missing", 100)({ data: {} })).toThrow("gave no JSON value to send");
  });

  it("when the process is paused past the time limit during an evaluation, spending no CPU, then the transform is evaluated again instead of failing", async () => {
    // A pause of the whole thread that uses no CPU, as a machine or container starved of it
    // makes one: the event's `data` blocks the first time it is read, for twice the limit.
    // The limit is long enough that the process's other threads (the collector, the
    // compiler) cannot reach a quarter of it meanwhile; a first evaluation warms jsonata up.
    const transform = compileTransform('$uppercase(data.plan) & "!"', 200);
    await transform({ data: { plan: "free" } });
    let pauses = 1;
    const event = {
      get data() {
        if (pauses-- > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 400);
        return { plan: "pro" };
      },
    };
    await expect(transform(event)).resolves.toBe('"PRO!"');
    expect(pauses).toBe(-1);
  });

  it("when an evaluation runs away, then it is past its time, evaluated once more at most (where the machine starved it)", async () => {
    let evaluations = 0;
    const event = {
      get data() {
        evaluations++;
        return { n: 1e12 };
      },
    };
    const spin = '($spin := function($n) { $n = 0 ? 0 : $spin($n - 1) }; $spin(data.n))';
    await expect(Promise.resolve(compileTransform(spin, 50)(event))).rejects.toThrow("ran past TRANSFORM_TIMEOUT_MS (50 ms)");
    // Once where it had the CPU, twice where it ran starved of it: never more.
    expect(evaluations).toBeLessThanOrEqual(2);

  });
});

/** The TransformError a transform throws or rejects with (an object of paths answers at once), or a failure when it does not. */
async function failureOf(run: () => unknown): Promise<TransformError> {
  const error = await Promise.resolve().then(run).then(() => undefined, (reason: unknown) => reason);
  expect(error).toBeInstanceOf(TransformError);
  return error as TransformError;
}

/** A route's transform (routes/route-transform.ts) and the body a delivery sends (dispatch/shape-body.ts), in our words when they fail. */
describe("a route's transform", () => {
  const event = userEvent({ data: { object: { user_id: "auth0|1", email: "a@example.com", plan: null } } });

  it("when the expression selects a value of any JSON kind, then the body is that value as JSON text", async () => {
    expect(await compileTransform('{ "email": data.object.email }', 1000)(event)).toBe('{"email":"a@example.com"}');
    expect(await compileTransform("data.object.plan", 1000)(event)).toBe("null");
    expect(await compileTransform("data.object.email = 'b@example.com'", 1000)(event)).toBe("false");
    expect(await compileTransform("0", 1000)(event)).toBe("0");
    expect(await compileTransform('""', 1000)(event)).toBe('""');
  });

  it("when the expression selects nothing, or a function (built-in or its own), then it gives no JSON value, in our words; a function inside the result is left out", async () => {
    for (const expression of ["data.object.nothing", "$uppercase", "function($x) { $x }"]) {
      const error = await failureOf(() => compileTransform(expression, 1000)(event));
      expect(error.message, expression).toBe("gave no JSON value to send (it selected nothing, or a function)");
    }
    // As JSON.stringify leaves out JavaScript's functions (jsonata's are objects, a lambda's circular).
    expect(await compileTransform('{ "f": $uppercase, "g": function($x) { $x }, "email": data.object.email }', 1000)(event)).toBe('{"email":"a@example.com"}');
    expect(await compileTransform("[$uppercase, 1]", 1000)(event)).toBe("[null,1]");
  });

  it("when the expression fails for an event, then the error says so with jsonata's message, code and position", async () => {
    expect((await failureOf(() => compileTransform('$error("no email")', 1000)(event))).message).toBe("failed: no email (D3137 at character 7)");
    expect((await failureOf(() => compileTransform('$number("x")', 1000)(event))).message).toBe('failed: Unable to cast value to a number: "x" (D3030 at character 8)');
    // A JavaScript error from inside a built-in has no code: its message alone.
    expect((await failureOf(() => compileTransform('$pad("a", 1e9)', 1000)(event))).message).toBe("failed: Invalid string length");
  });

  it("when the expression recurses past its depth, then it fails as a stack overflow, and a recursion within the depth gives its value", async () => {
    const recursion = (depth: number) => `($f := function($n){ $n = 0 ? 0 : 1 + $f($n - 1) }; $f(${depth}))`;
    expect(await compileTransform(recursion(200), 1000)(event)).toBe("200");
    expect((await failureOf(() => compileTransform(recursion(5000), 1000)(event))).message).toMatch(/^failed: Stack overflow\. Check for non-terminating recursive function\. .* \(D1011 at character \d+\)$/);
  });

  it("when the expression runs past its time, then the error names TRANSFORM_TIMEOUT_MS and the time", async () => {
    const loop = "($f := function($n){ $n < 0 ? 0 : $f($n + 1) }; $f(0))";
    expect((await failureOf(() => compileTransform(loop, 30)(event))).message).toBe("ran past TRANSFORM_TIMEOUT_MS (30 ms)");
  });

  it("when the expression does not parse, then the error says so with jsonata's message, code and position", () => {
    expect(() => compileTransform('{ "email": data.object.email', 1000)).toThrow(new TransformError('does not parse: Expected "}" before end of expression (S0203 at character 28)'));
  });

  it("when a route has no transform, then the body is the CloudEvent (or its stored JSON text) as cloudevents JSON; with one, its result as JSON", async () => {
    const plain = createBodyShaper({}, 1000);
    expect(await plain({ event, origin: "webhook", receivedAt: 1 })).toEqual({ body: JSON.stringify(event), contentType: "application/cloudevents+json" });
    expect(await plain({ event, eventJson: '{"deep":true}', origin: "webhook", receivedAt: 1 })).toEqual({ body: '{"deep":true}', contentType: "application/cloudevents+json" });
    const shaped = createBodyShaper({ transform: "data.object.email" }, 1000);
    expect(await shaped({ event, origin: "webhook", receivedAt: 1 })).toEqual({ body: '"a@example.com"', contentType: "application/json" });
    // An event stored as its text (too deep for JSON.stringify) is transformed whole.
    expect(await shaped({ event: { ...event, data: undefined }, eventJson: JSON.stringify(event), origin: "webhook", receivedAt: 1 })).toEqual({ body: '"a@example.com"', contentType: "application/json" });
  });
});
