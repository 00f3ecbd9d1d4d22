import { execFile } from "node:child_process";
import { archiveUp } from "../../src/metrics/archive-metrics.js";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { registry } from "../../src/metrics/registry.js";
import { findTool, pathOf } from "../helpers/find-tool.js";
import { userEvent } from "../helpers/fixtures.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

const run = promisify(execFile);
const promtool = findTool("promtool", "Debian: apt-get install -y prometheus");

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: { summary: string; description: string; runbook: string };
}
interface Panel {
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: Array<{ expr: string; datasource?: { uid: string } }>;
}

async function dashboardFiles(): Promise<string[]> {
  const dir = "deploy/grafana/dashboards";
  return (await readdir(dir)).filter((name) => name.endsWith(".json")).map((name) => join(dir, name));
}

async function alertRules(): Promise<Rule[]> {
  const alerts = parseYaml(await readFile("deploy/prometheus/alerts.yml", "utf8")) as { groups: Array<{ rules: Rule[] }> };
  return alerts.groups.flatMap((group) => group.rules);
}

/** Every PromQL expression of the dashboards and the alert rules, with where it comes from. */
async function expressions(): Promise<Array<{ where: string; expr: string }>> {
  const found: Array<{ where: string; expr: string }> = [];
  for (const file of await dashboardFiles()) {
    const dashboard = JSON.parse(await readFile(file, "utf8")) as { panels: Panel[] };
    for (const panel of dashboard.panels) {
      for (const target of panel.targets ?? []) found.push({ where: `${file} panel "${panel.title}"`, expr: target.expr });
    }
  }
  for (const rule of await alertRules()) found.push({ where: `alerts.yml ${rule.alert}`, expr: rule.expr });
  return found;
}

/** The metric family a series name belongs to (a histogram's _bucket/_sum/_count are its). */
/**
 * Registered only by a process whose archive is on (metrics/archive-metrics.ts), so that
 * ARCHIVE=off exports no 0 an alert would take for an outage; this service runs without it.
 */
const onlyWithArchive = [archiveUp].map((metric) => (metric as unknown as { name: string }).name);

function family(name: string, families: Set<string>): string | undefined {
  if (families.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  return families.has(base) ? base : undefined;
}

describe("operate: the deploy files", () => {
  let service: TestService;
  let families: Set<string>;
  beforeAll(async () => {
    service = await startTestService({ DOWNSTREAM_URL: "http://127.0.0.1:9/" }, "receiver");
    const event = userEvent();
    await service.post("/webhooks", JSON.stringify(event));
    await service.post("/webhooks", JSON.stringify(event));
    await service.post("/webhooks", "{not json");
    const text = await (await fetch(`${service.adminUrl}/metrics`)).text();
    families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!));
  });
  afterAll(async () => {
    await service?.close();
  });

  it("when the dashboards and alerts name a metric, then the running service's /metrics has it, with those labels", async () => {
    const problems: string[] = [];
    const all = await expressions();
    expect(all.length).toBeGreaterThan(20);
    for (const { where, expr } of all) {
      // `up` is Prometheus's own series for a scrape target.
      const names = [...expr.matchAll(/\b(streamkeeper_[a-z0-9_]+)\b/g)].map((match) => match[1]!);
      for (const name of names) {
        const known = family(name, families) ?? (onlyWithArchive.includes(name) ? name : undefined);
        if (!known) problems.push(`${where}: ${name} is not in /metrics`);
      }
      // Label names used in selectors must exist on that metric (Prometheus adds job and instance).
      for (const [, name, selector] of expr.matchAll(/\b(streamkeeper_[a-z0-9_]+)\{([^}]*)\}/g)) {
        const known = family(name!, families);
        const metric = known && registry.getSingleMetric(known);
        if (!metric) continue;
        const labels = new Set([...((metric as unknown as { labelNames: string[] }).labelNames ?? []), "job", "instance", ...(name !== known ? ["le"] : [])]);
        for (const [, label] of selector!.matchAll(/([a-zA-Z_]+)\s*(=~|!~|!=|=)/g)) {
          if (!labels.has(label!)) problems.push(`${where}: ${name} has no label ${label}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("when Grafana provisions the dashboard, then every panel queries the dashboard's datasource variable", async () => {
    const datasources = parseYaml(await readFile("deploy/grafana/provisioning/datasources/prometheus.yml", "utf8")) as {
      datasources: Array<{ type: string; url: string }>;
    };
    expect(datasources.datasources[0]).toMatchObject({ type: "prometheus", url: "http://prometheus:9090" });
    const providers = parseYaml(await readFile("deploy/grafana/provisioning/dashboards/streamkeeper.yml", "utf8")) as {
      providers: Array<{ type: string; options: { path: string } }>;
    };
    expect(providers.providers[0]).toMatchObject({ type: "file", options: { path: "/var/lib/grafana/dashboards/streamkeeper" } });

    for (const file of await dashboardFiles()) {
      const dashboard = JSON.parse(await readFile(file, "utf8")) as { uid: string; panels: Panel[]; templating: { list: Array<{ name: string; type: string }> } };
      expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: "datasource", type: "datasource" }));
      const queried = dashboard.panels.filter((panel) => panel.type !== "row");
      expect(queried.length).toBeGreaterThanOrEqual(15);
      for (const panel of queried) {
        expect(panel.datasource?.uid, panel.title).toBe("${datasource}");
        for (const target of panel.targets ?? []) expect(target.datasource?.uid, panel.title).toBe("${datasource}");
      }
    }
  });

  it("when an alert fires, then it has a severity, a summary and a runbook section in docs/operating.md", async () => {
    const docs = await readFile("docs/operating.md", "utf8");
    const anchors = new Set([...docs.matchAll(/^#+ (.+)$/gm)].map((match) => match[1]!.toLowerCase().trim().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-")));
    const rules = await alertRules();
    expect(rules.map((rule) => rule.alert)).toEqual(
      expect.arrayContaining(["StreamkeeperRedisDown", "StreamkeeperDeadLettersGrowing", "StreamkeeperBacklogOld", "StreamkeeperTenantApiRateLimited", "StreamkeeperIngestStopped"]),
    );
    for (const rule of rules) {
      expect(["warning", "critical"], rule.alert).toContain(rule.labels.severity);
      expect(rule.annotations.summary, rule.alert).toBeTruthy();
      const [path, anchor] = rule.annotations.runbook.split("#");
      expect(path, rule.alert).toBe("docs/operating.md");
      expect(anchors.has(anchor!), `${rule.alert}: docs/operating.md has no section #${anchor}`).toBe(true);
    }
    const prometheus = parseYaml(await readFile("deploy/prometheus/prometheus.yml", "utf8")) as {
      rule_files: string[];
      scrape_configs: Array<{ job_name: string; metrics_path: string }>;
    };
    expect(prometheus.rule_files).toContain("/etc/prometheus/alerts.yml");
    // The alerts select job="streamkeeper".
    expect(prometheus.scrape_configs).toContainEqual(expect.objectContaining({ job_name: "streamkeeper", metrics_path: "/metrics" }));
  });

  it.skipIf(promtool.skip)("when promtool is installed (always under CI), then it accepts the rules and their unit tests pass", async () => {
    await run(pathOf(promtool), ["check", "rules", "deploy/prometheus/alerts.yml"]);
    const { stdout } = await run(pathOf(promtool), ["test", "rules", "deploy/prometheus/alerts.test.yml"]);
    expect(stdout).toContain("SUCCESS");
  });
});
