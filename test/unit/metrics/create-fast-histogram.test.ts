import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createFastHistogram } from "../../../src/metrics/create-fast-histogram.js";
import { openMetricsRegistry } from "../../helpers/open-metrics-registry.js";

const buckets = [0.005, 0.01, 0.1, 1, 10];
const config = { name: "test_seconds", help: "A test histogram", labelNames: ["route", "origin"], buckets };

/** prom-client's Histogram and ours, each in its own registry, fed alike by `feed`. */
async function bothTexts(feed: (observe: (labels: { route: string; origin: string } | undefined, value: number) => void) => void) {
  const theirs = new Registry();
  const reference = new Histogram({ ...config, labelNames: [...config.labelNames], buckets: [...buckets], registers: [theirs] });
  feed((labels, value) => (labels ? reference.observe(labels, value) : reference.observe(value)));
  const mine = new Registry();
  const fast = createFastHistogram({ ...config, registers: [mine] });
  feed((labels, value) => (labels ? fast.observe(labels, value) : fast.observe(value)));
  // prom-client's JSON adds an empty exemplar to each value: not ours to read.
  const withoutExemplars = (json: Awaited<ReturnType<Registry["getMetricsAsJSON"]>>) => json.map((metric) => ({ ...metric, values: metric.values.map((value) => {
      const { exemplar: _, ...rest } = value as typeof value & { exemplar?: unknown };
      return rest;
    }) }));
  return { theirs: await theirs.metrics(), mine: await mine.metrics(), theirsJson: withoutExemplars(await theirs.getMetricsAsJSON()), mineJson: withoutExemplars(await mine.getMetricsAsJSON()) };
}

describe("createFastHistogram", () => {
  it("when observed as prom-client's Histogram is, at, between and past its bounds, then /metrics reads the same, text and JSON", async () => {
    const values = [0, 0.005, 0.0051, 0.01, 0.5, 1, 1.0001, 10, 11, 3600, 0.1];
    const texts = await bothTexts((observe) => {
      values.forEach((value, index) => observe({ route: index % 2 ? "crm" : "billing", origin: index % 3 ? "webhook" : "pull" }, value));
    });
    expect(texts.mine).toBe(texts.theirs);
    expect(texts.mineJson).toEqual(texts.theirsJson);
    expect(texts.mine).toContain('test_seconds_bucket{le="0.005",route="billing",origin="pull"} 1\ntest_seconds_bucket{le="0.01",route="billing",origin="pull"} 1');
  });

  it("when a label set is bound once, then its observations and timers land in that set only", async () => {
    const registry = new Registry();
    const histogram = createFastHistogram({ ...config, registers: [registry] });
    const crm = histogram.labels("crm", "webhook");
    crm.observe(0.05);
    const timer = crm.startTimer();
    const waitedFrom = Date.now();
    while (Date.now() - waitedFrom < 30) {
      // A timer in seconds, not milliseconds: 30 ms of this loop read as at least 0.025 s.
    }
    const seconds = timer();
    histogram.observe({ route: "billing", origin: "webhook" }, 2);
    const json = await histogram.get();
    const count = (route: string) => json.values.find((value) => value.metricName === "test_seconds_count" && value.labels.route === route)?.value;
    expect(count("crm")).toBe(2);
    expect(count("billing")).toBe(1);
    expect(seconds).toBeGreaterThanOrEqual(0.025);
    expect(seconds).toBeLessThan(60);
    expect(json.values.find((value) => value.metricName === "test_seconds_sum" && value.labels.route === "crm")?.value).toBeCloseTo(0.05 + seconds, 9);
  });

  it("when reset, then every set reads 0 and a bound set still counts", async () => {
    const registry = new Registry();
    const histogram = createFastHistogram({ ...config, registers: [registry] });
    const crm = histogram.labels("crm", "webhook");
    crm.observe(0.05);
    registry.resetMetrics();
    crm.observe(20);
    const text = await registry.metrics();
    expect(text).toContain('test_seconds_bucket{le="10",route="crm",origin="webhook"} 0');
    expect(text).toContain('test_seconds_bucket{le="+Inf",route="crm",origin="webhook"} 1');
    expect(text).toContain('test_seconds_sum{route="crm",origin="webhook"} 20');
  });

  it("when given a label it does not have, a wrong number of values, a value that is no number, or bounds out of order, then it says which", () => {
    const histogram = createFastHistogram({ ...config, registers: [] });
    expect(() => histogram.observe({ route: "crm", status: "200" } as never, 1)).toThrow("test_seconds has no label status; its labels: route, origin");
    expect(() => histogram.labels("crm")).toThrow("test_seconds: give 2 label values (route, origin), not 1");
    expect(() => histogram.labels("crm", "webhook").observe(Number.NaN)).toThrow("test_seconds: observe a finite number, not NaN");
    expect(() => createFastHistogram({ ...config, buckets: [1, 0.5], registers: [] })).toThrow("test_seconds: give the buckets' upper bounds in ascending order");
    expect(() => createFastHistogram({ ...config, buckets: [0.5, 1, 1], registers: [] })).toThrow("ascending order");
  });

  it("when registered, then the registry sees a histogram summed across processes", () => {
    expect(createFastHistogram({ ...config, registers: [] })).toMatchObject({ name: "test_seconds", help: "A test histogram", type: "histogram", aggregator: "sum", labelNames: ["route", "origin"] });
  });

  it("when observed with some of its labels, then only those are exported, as prom-client's", async () => {
    const texts = await bothTexts((observe) => observe({ route: "crm" } as never, 0.2));
    expect(texts.mine).toBe(texts.theirs);
    expect(texts.mine).toContain('test_seconds_count{route="crm"} 1');
  });

  it("when it has no labels, then it reads empty from the start and observe takes the value alone, as prom-client's", async () => {
    const theirs = new Registry();
    const reference = new Histogram({ name: "plain_seconds", help: "plain", buckets: [...buckets], registers: [theirs] });
    const mine = new Registry();
    const fast = createFastHistogram({ name: "plain_seconds", help: "plain", buckets, registers: [mine] });
    expect(await mine.metrics()).toBe(await theirs.metrics());
    expect(await mine.metrics()).toContain("plain_seconds_count 0");
    for (const value of [0.001, 0.2, 30]) {
      reference.observe(value);
      fast.observe(value);
    }
    expect(await mine.metrics()).toBe(await theirs.metrics());
    expect(() => fast.observe({ route: "crm" } as never, 1)).toThrow("plain_seconds has no label route; its labels: none");
  });

  it("when a label is named le, then it says the histogram has that one already, as prom-client refuses it", () => {
    expect(() => createFastHistogram({ name: "le_seconds", help: "le", labelNames: ["le"], buckets, registers: [] })).toThrow("le_seconds: le is the histogram's own label");
  });

  it("when the registry exports OpenMetrics, then it reads as prom-client's there too", async () => {
    const theirs = openMetricsRegistry();
    const reference = new Histogram({ ...config, labelNames: [...config.labelNames], buckets: [...buckets], registers: [theirs] });
    const mine = openMetricsRegistry();
    const fast = createFastHistogram({ ...config, registers: [mine] });
    reference.observe({ route: "crm", origin: "pull" }, 0.5);
    fast.labels("crm", "pull").observe(0.5);
    expect(await mine.metrics()).toBe(await theirs.metrics());
  });
});
