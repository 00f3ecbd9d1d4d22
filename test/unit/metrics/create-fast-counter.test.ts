import { Counter, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createFastCounter } from "../../../src/metrics/create-fast-counter.js";
import { openMetricsRegistry } from "../../helpers/open-metrics-registry.js";

const config = { name: "test_total", help: "A test counter", labelNames: ["route", "outcome"] };

describe("createFastCounter", () => {
  it("when counted as prom-client's Counter is, bound and by name, then /metrics reads the same, text and JSON", async () => {
    const theirs = new Registry();
    const reference = new Counter({ ...config, labelNames: [...config.labelNames], registers: [theirs] });
    const mine = new Registry();
    const fast = createFastCounter({ ...config, registers: [mine] });
    reference.inc({ route: "crm", outcome: "delivered" });
    reference.inc({ route: "crm", outcome: "delivered" }, 2);
    reference.inc({ route: "billing", outcome: "retry" }, 0.5);
    reference.inc({ route: "crm", outcome: 'say "hi"\n' });
    const delivered = fast.labels("crm", "delivered");
    delivered.inc();
    delivered.inc(2);
    fast.inc({ route: "billing", outcome: "retry" }, 0.5);
    fast.inc({ route: "crm", outcome: 'say "hi"\n' });
    expect(await mine.metrics()).toBe(await theirs.metrics());
    expect(await mine.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    expect(await mine.metrics()).toContain('test_total{route="crm",outcome="delivered"} 3');
  });

  it("when the registry exports OpenMetrics, then it reads as prom-client's there too (one _total, not two)", async () => {
    const theirs = openMetricsRegistry();
    const reference = new Counter({ ...config, labelNames: [...config.labelNames], registers: [theirs] });
    const mine = openMetricsRegistry();
    const fast = createFastCounter({ ...config, registers: [mine] });
    reference.inc({ route: "crm", outcome: "delivered" }, 2);
    fast.labels("crm", "delivered").inc(2);
    expect(await mine.metrics()).toBe(await theirs.metrics());
    expect(await mine.metrics()).toContain('test_total{route="crm",outcome="delivered"} 2');
  });

  it("when it has no labels, then inc takes the amount alone", async () => {
    const registry = new Registry();
    const counter = createFastCounter({ name: "plain_total", help: "plain", registers: [registry] });
    // From the start, as prom-client's.
    expect(await registry.metrics()).toContain("plain_total 0");
    counter.inc();
    counter.inc(4);
    counter.inc(0);
    expect(await registry.metrics()).toContain("plain_total 5");
    expect(counter).toMatchObject({ type: "counter", aggregator: "sum", labelNames: [] });
    expect(() => counter.inc({ route: "crm" })).toThrow("plain_total has no label route; its labels: none");
    expect(() => counter.labels("crm")).toThrow("plain_total: give 0 label values (none), not 1");
  });

  it("when two sets' values join alike, then they stay two sets", async () => {
    const registry = new Registry();
    const counter = createFastCounter({ ...config, registers: [registry] });
    counter.labels("ab", "c").inc();
    counter.labels("a", "bc").inc(2);
    const text = await registry.metrics();
    expect(text).toContain('test_total{route="ab",outcome="c"} 1');
    expect(text).toContain('test_total{route="a",outcome="bc"} 2');
  });

  it("when reset, then every set reads 0 and a bound set still counts", async () => {
    const registry = new Registry();
    const counter = createFastCounter({ ...config, registers: [registry] });
    const delivered = counter.labels("crm", "delivered");
    delivered.inc(5);
    registry.resetMetrics();
    delivered.inc();
    expect(await registry.metrics()).toContain('test_total{route="crm",outcome="delivered"} 1');
  });

  it("when given a label it does not have, a wrong number of values or an amount that would lower it, then it says which", () => {
    const counter = createFastCounter({ ...config, registers: [] });
    expect(() => counter.inc({ route: "crm", status: "200" } as never)).toThrow("test_total has no label status; its labels: route, outcome");
    expect(() => counter.labels("crm")).toThrow("test_total: give 2 label values (route, outcome), not 1");
    expect(() => counter.labels("crm", "delivered").inc(-1)).toThrow("test_total: a counter only goes up by a finite amount, not -1");
    expect(() => counter.inc({ route: "crm" }, Number.POSITIVE_INFINITY)).toThrow("not Infinity");
  });
});
