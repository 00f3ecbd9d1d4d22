import jsonata from "jsonata";
import { describe, expect, it } from "vitest";
import { compileTransform } from "../../../src/routes/route-transform.js";

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
