import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { loadConfig, settings } from "../../src/config/config.js";
import { parseRoutes } from "../../src/routes/load-routes.js";
import { buildCli } from "../helpers/build-cli.js";
import { loggedUrl } from "../helpers/log-lines.js";
import { until } from "../helpers/until.js";

/**
 * There is no Docker engine here, so the deploy files are checked by construction: they
 * parse, name only real settings with valid values, point at each other consistently,
 * and the image's ENTRYPOINT, CMD and HEALTHCHECK are run as written against a build.
 */
const root = resolve(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(join(root, path), "utf8");
const settingNames = new Set(Object.keys(settings));

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- parsed YAML, checked field by field

function envFileKeys(path: string): string[] {
  // Commented-out `# KEY=value` lines are alternatives the operator may switch to: check them too.
  return [...read(path).matchAll(/^(?:#\s*)?([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1]!);
}

function envFileValues(path: string): Record<string, string> {
  return Object.fromEntries([...read(path).matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((match) => [match[1]!, match[2]!]));
}

describe("Dockerfile", () => {
  const lines = read("Dockerfile")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
  const instructions = lines.map((line) => {
    const [keyword, ...rest] = line.split(/\s+/);
    return { keyword: keyword!.toUpperCase(), args: rest.join(" ") };
  });
  const all = (keyword: string) => instructions.filter((instruction) => instruction.keyword === keyword).map((instruction) => instruction.args);
  const last = (keyword: string) => all(keyword).at(-1) ?? "";
  const runtimeStart = instructions.findIndex((instruction) => instruction.keyword === "FROM" && / AS runtime$/i.test(instruction.args));
  const runtime = instructions.slice(runtimeStart);
  const jsonArray = (text: string) => JSON.parse(text) as string[];

  it("when read, then it builds with dev dependencies and runs with production ones only, as a non-root user", () => {
    expect(all("FROM").map((from) => from.split(" AS ")[1])).toEqual(["build", "runtime"]);
    expect(read("Dockerfile")).toMatch(/ARG NODE_IMAGE=node:20-bookworm-slim/);
    expect(all("RUN")).toContain("npx tsc -p tsconfig.build.json");
    const runtimeRuns = runtime.filter((instruction) => instruction.keyword === "RUN").map((instruction) => instruction.args);
    // The committed lock file is complete: both stages install exactly it.
    expect(runtimeRuns.some((run) => run.includes("npm ci --omit=dev"))).toBe(true);
    expect(last("USER")).toBe("node");
    expect(last("EXPOSE").split(" ").sort()).toEqual(["8080", "9090"]);
    expect(last("VOLUME")).toContain("/data");
  });

  it("when its ENV lines are read, then each names a setting with a valid value", () => {
    const env = Object.fromEntries(all("ENV").map((args) => args.split("=") as [string, string]));
    for (const name of Object.keys(env).filter((name) => name !== "NODE_ENV")) expect(settingNames).toContain(name);
    expect(() => loadConfig({ ...env, WEBHOOK_AUTH: "none" })).not.toThrow();
    expect(env.ADMIN_HOST).toBe("0.0.0.0");
    expect(env.DATA_DIR).toBe(JSON.parse(last("VOLUME"))[0]);
  });

  it("when its COPY sources are checked, then they exist and .dockerignore keeps them while dropping secrets and build output", () => {
    const sources = runtime
      .concat(instructions.slice(0, runtimeStart))
      .filter((instruction) => instruction.keyword === "COPY" && !instruction.args.startsWith("--from"))
      .flatMap((instruction) => instruction.args.split(/\s+/).slice(0, -1));
    expect(sources.sort()).toEqual(["package-lock.json", "package-lock.json", "package.json", "package.json", "scripts/copy-assets.mjs", "src", "tsconfig.build.json", "tsconfig.json", "web"].sort());
    for (const source of sources) expect(existsSync(join(root, source)), source).toBe(true);
    const ignored = read(".dockerignore")
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith("#"));
    const matches = (pattern: string, path: string) =>
      new RegExp(`^${pattern.replace(/[.+^${}()|[\]]/g, "\\$&").replace(/\*\*\//g, "(.*/)?").replace(/\*/g, "[^/]*")}$`).test(path);
    for (const source of sources) expect(ignored.some((pattern) => matches(pattern, source)), source).toBe(false);
    for (const secret of ["node_modules", ".git", ".streamkeeper", "dist", "deploy/streamkeeper.env", ".env"]) {
      expect(ignored.some((pattern) => matches(pattern, secret) || secret.startsWith(`${pattern}/`)), secret).toBe(true);
    }
  });

  describe("when built and run as the image runs it", () => {
    let outDir: string;
    beforeAll(async () => {
      outDir = await buildCli("deploy-files");
    });

    it("then the runtime needs no dev dependency: every package the built code imports is in dependencies", async () => {
      const pkg = JSON.parse(read("package.json")) as { dependencies: Record<string, string> };
      const imported = new Set<string>();
      for (const file of await listJs(join(outDir, "dist"))) {
        const code = await readFile(file, "utf8");
        // Import and export statements (tsc writes each on lines of its own) and dynamic
        // imports; not the words "from" or "import" in a comment or a message.
        const statements = /^\s*(?:import|export)\b[^;"]*?\bfrom\s*"([^".][^"]*)"|^\s*import\s*"([^".][^"]*)"|\bimport\(\s*"([^".][^"]*)"\s*\)/gm;
        for (const [, fromStatement, bare, fromCall] of code.matchAll(statements)) {
          const specifier = fromStatement ?? bare ?? fromCall;
          if (specifier!.startsWith("node:") || builtinModules.includes(specifier!)) continue;
          const parts = specifier!.split("/");
          imported.add(specifier!.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!);
        }
      }
      expect(imported.size).toBeGreaterThan(5);
      for (const name of imported) expect(Object.keys(pkg.dependencies), name).toContain(name);
    });

    it("then ENTRYPOINT + CMD starts the service, HEALTHCHECK passes against it, and STOPSIGNAL stops it with exit 0", async () => {
      const entrypoint = jsonArray(last("ENTRYPOINT"));
      const cmd = jsonArray(last("CMD"));
      expect(entrypoint).toEqual(["node", "dist/cli/main.js"]);
      expect(cmd).toEqual(["start", "--role", "all"]);
      const healthcheck = last("HEALTHCHECK");
      const probe = jsonArray(healthcheck.slice(healthcheck.indexOf("CMD ") + 4));
      expect(probe.join(" ")).toContain("/healthz");

      const dataDir = await mkdtemp(join(tmpdir(), "sk-deploy-"));
      const env = {
        PATH: process.env.PATH,
        // The image's ENV, with the admin surface on loopback: tests bind nothing else.
        DATA_DIR: dataDir,
        ADMIN_HOST: "127.0.0.1",
        // Ports 0, the admin port read back from the log for the probe: a port picked free
        // beforehand may be taken by a test file running beside this one before the bind.
        ADMIN_PORT: "0",
        PORT: "0",
        HOST: "127.0.0.1",
        REDIS_URL: inject("redisUrl"),
        QUEUE_PREFIX: `test-deploy-${process.pid}`,
        WEBHOOK_USERNAME: "tenant",
        WEBHOOK_PASSWORD: "s3cret-webhook-password",
        LOG_LEVEL: "info",
        // The service refuses to start without a route (streamkeeper.env.example sets one).
        DOWNSTREAM_URL: "http://127.0.0.1:9/",
        ARCHIVE: "off",
      };
      const service = spawn(entrypoint[0]!, [entrypoint[1]!.replace(/^dist\//, `${outDir}/dist/`), ...cmd], { env, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      service.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      service.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      try {
        const adminUrl = await until("the service's admin surface listening", () => {
          if (service.exitCode !== null) throw new Error(`the service exited with ${service.exitCode}: ${stderr}`);
          return loggedUrl(stdout, "admin");
        });
        const adminPort = new URL(adminUrl).port;
        // The HEALTHCHECK as Docker runs it: its exit code is the verdict.
        const deadline = Date.now() + 120_000;
        let status: number | null = 1;
        while (status !== 0 && Date.now() < deadline) {
          status = spawnSync(probe[0]!, probe.slice(1), { env: { PATH: process.env.PATH, ADMIN_PORT: adminPort }, timeout: 30_000 }).status;
          if (status !== 0) await sleep(100);
        }
        expect(status, stderr).toBe(0);
        const stopSignal = last("STOPSIGNAL") as NodeJS.Signals;
        service.kill(stopSignal);
        const [code] = (await once(service, "close")) as [number | null];
        expect(code, stderr).toBe(0);
        // With the service gone the same probe fails, so it is not vacuous.
        expect(spawnSync(probe[0]!, probe.slice(1), { env: { PATH: process.env.PATH, ADMIN_PORT: adminPort } }).status).toBe(1);
      } finally {
        service.kill("SIGKILL");
        await rm(dataDir, { recursive: true, force: true });
      }
    }, 300_000);

    afterAll(async () => {
      if (outDir) await rm(outDir, { recursive: true, force: true });
    });
  });
});

describe("deploy/docker-compose.yml", () => {
  const compose = parseYaml(read("deploy/docker-compose.yml"), { merge: true }) as Doc;
  const services = compose.services as Record<string, Doc>;
  const ours = Object.entries(services).filter(([, service]) => String(service.image).includes("streamkeeper"));

  it("when parsed, then Redis keeps an append-only file and never evicts, and each role runs from the one image", () => {
    const redis = services.redis!;
    expect(redis.image).toMatch(/^redis:7/);
    expect(redis.command.join(" ")).toMatch(/--appendonly yes/);
    expect(redis.command.join(" ")).toMatch(/--maxmemory-policy noeviction/);
    expect(redis.volumes[0]).toMatch(/:\/data$/);
    expect(services.receiver!.command).toEqual(["start", "--role", "receiver"]);
    expect(services.worker!.command).toEqual(["start", "--role", "worker"]);
    expect(services.receiver!.image).toBe(services.worker!.image);
    expect(services.receiver!.build.dockerfile).toBe("Dockerfile");
    expect(existsSync(join(root, "deploy", services.receiver!.build.context, services.receiver!.build.dockerfile))).toBe(true);
    expect(services.worker!.ports).toBeUndefined(); // so `--scale worker=N` works
    expect(services.emulator!.profiles).toEqual(["demo"]);
    expect(services.emulator!.command).toEqual(["emulator"]);
    expect(services.downstream!.profiles).toEqual(["demo"]);
  });

  it("when the receiver's published ports are read, then the ingress is public and the admin port is on loopback only", () => {
    const ports = services.receiver!.ports as string[];
    const port = String(services.receiver!.environment.PORT);
    expect(ports).toContain(`${port}:${port}`);
    expect(ports.filter((mapping) => mapping.endsWith(":9090"))).toEqual(["127.0.0.1:9090:9090"]);
    for (const name of ["prometheus", "grafana"]) {
      for (const mapping of services[name]!.ports as string[]) expect(mapping).toMatch(/^127\.0\.0\.1:/);
    }
  });

  it("when every env var the Streamkeeper containers get is listed, then each is a setting of config.ts (or the emulator's EMULATOR_*)", () => {
    for (const [name, service] of ours) {
      for (const key of Object.keys(service.environment ?? {})) {
        expect(settingNames.has(key) || (name === "emulator" && key.startsWith("EMULATOR_")), `${name}: ${key}`).toBe(true);
      }
      for (const file of service.env_file ?? []) {
        const example = `deploy/${String(file.path).replace(/^\.\//, "")}.example`;
        expect(existsSync(join(root, example)), example).toBe(true);
        for (const key of envFileKeys(example)) expect(settingNames, `${example}: ${key}`).toContain(key);
      }
    }
  });

  it("when the example env file fills the rest, then the receiver's and the worker's settings load", () => {
    for (const name of ["receiver", "worker"]) {
      const env = { ...envFileValues("deploy/streamkeeper.env.example"), ...services[name]!.environment };
      expect(() => loadConfig(env), name).not.toThrow();
    }
  });

  it("when the archive's settings are read, then the receiver and the worker name one database, the compose stack's postgres (not an embedded one each)", () => {
    const databases = ["receiver", "worker"].map((name) => loadConfig({ ...envFileValues("deploy/streamkeeper.env.example"), ...services[name]!.environment }).env);
    for (const env of databases) expect(env.ARCHIVE).toBe("on");
    expect(new Set(databases.map((env) => env.ARCHIVE_DATABASE_URL)).size).toBe(1);
    const host = new URL(databases[0]!.ARCHIVE_DATABASE_URL!).hostname;
    expect(services[host]!.image).toMatch(/^postgres:/);
    expect(services[host]!.volumes[0]).toMatch(/:\/var\/lib\/postgresql\/data$/);
    for (const name of ["receiver", "worker"]) expect(Object.keys(services[name]!.depends_on)).toContain(host);
  });

  it("when scanned for secrets, then none is written in the compose file itself", () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [key, value] of Object.entries(service.environment ?? {})) {
        if (/PASSWORD|TOKEN|SECRET|HEADER_VALUE/.test(key)) expect.fail(`${name}: ${key}=${String(value)} belongs in an env file`);
      }
    }
    expect(read("deploy/docker-compose.yml")).not.toMatch(/REPLACE|change-me|password=/i);
  });

  it("when Prometheus and Grafana are mounted, then they get the files under deploy/prometheus and deploy/grafana", () => {
    const mounts = [...services.prometheus!.volumes, ...services.grafana!.volumes] as string[];
    const hostPaths = mounts.map((mount) => mount.split(":")[0]!).filter((path) => path.startsWith("./"));
    expect(hostPaths.sort()).toEqual(["./grafana/dashboards", "./grafana/provisioning", "./prometheus/alerts.yml", "./prometheus/prometheus.yml"]);
    for (const path of hostPaths) expect(existsSync(join(root, "deploy", path)), `deploy/${path.slice(2)}`).toBe(true);
    // Grafana's dashboard provider must read where compose mounts the dashboards.
    const dashboardsMount = mounts.find((mount) => mount.startsWith("./grafana/dashboards:"))!.split(":")[1]!;
    const providers = readdirYaml("deploy/grafana/provisioning/dashboards");
    expect(providers.flatMap((doc) => (doc.providers ?? []).map((provider: Doc) => provider.options?.path))).toContain(dashboardsMount);
  });

  it("when Prometheus' scrape targets are read, then each names a compose service that runs Streamkeeper, on its admin port", () => {
    const prometheus = parseYaml(read("deploy/prometheus/prometheus.yml")) as Doc;
    const targets = (prometheus.scrape_configs as Doc[]).flatMap((job) => [
      ...(job.static_configs ?? []).flatMap((config: Doc) => config.targets as string[]),
      ...(job.dns_sd_configs ?? []).flatMap((config: Doc) => (config.names as string[]).map((name) => `${name}:${config.port}`)),
    ]);
    const ofStreamkeeper = targets.filter((target) => !target.startsWith("localhost:") && !target.startsWith("prometheus:"));
    for (const target of ofStreamkeeper) expect(Object.keys(services), target).toContain(target.split(":")[0]);
    // Both roles, at the admin port; dns_sd_configs (type A) finds every `--scale worker=N` replica.
    expect(ofStreamkeeper.sort()).toEqual(["receiver:9090", "worker:9090"]);
  });
});

describe("deploy/k8s", () => {
  const kustomization = parseYaml(read("deploy/k8s/kustomization.yaml")) as Doc;
  const docs: Doc[] = (kustomization.resources as string[]).flatMap((file) => yamlDocs(`deploy/k8s/${file}`));
  const secrets = yamlDocs("deploy/k8s/secret.example.yaml");
  const ofKind = (kind: string) => docs.filter((doc) => doc.kind === kind);
  const named = (kind: string, name: string) => [...docs, ...secrets].find((doc) => doc.kind === kind && doc.metadata.name === name);
  const deployments = ofKind("Deployment");
  const labelsMatch = (selector: Record<string, string>, labels: Record<string, string>) =>
    Object.entries(selector).every(([key, value]) => labels[key] === value);
  const configMap = named("ConfigMap", "streamkeeper-config")!;

  it("when kustomization.yaml is read, then every resource file exists and parses, and the Secrets stay out of it", () => {
    expect(kustomization.kind).toBe("Kustomization");
    for (const file of kustomization.resources as string[]) expect(existsSync(join(root, "deploy/k8s", file)), file).toBe(true);
    expect(kustomization.resources).not.toContain("secret.example.yaml");
    expect(docs.map((doc) => doc.kind).sort()).toEqual(
      ["ConfigMap", "Deployment", "Deployment", "HorizontalPodAutoscaler", "HorizontalPodAutoscaler", "Ingress", "Namespace", "PodDisruptionBudget", "PodDisruptionBudget", "Service", "Service"].sort(),
    );
    const images = new Set((kustomization.images as Doc[]).map((image) => image.name));
    for (const deployment of deployments) for (const container of deployment.spec.template.spec.containers) expect(images).toContain(container.image);
  });

  it("when the ConfigMap and the Secret template are read, then they name only settings, and together they load", () => {
    const secretEnv = named("Secret", "streamkeeper-secrets")!.stringData as Record<string, string>;
    for (const key of [...Object.keys(configMap.data), ...Object.keys(secretEnv)]) expect(settingNames, key).toContain(key);
    for (const key of Object.keys(configMap.data)) expect(/PASSWORD|TOKEN|SECRET|REDIS_URL/.test(key), `${key} belongs in the Secret`).toBe(false);
    const config = loadConfig({ ...configMap.data, ...secretEnv });
    expect(config.env.ADMIN_HOST).toBe("0.0.0.0");
    // Every pod's archive is one database: a pod's root filesystem is read-only, and an embedded Postgres would be one per pod.
    expect(config.env.ARCHIVE === "off" || config.env.ARCHIVE_DATABASE_URL !== undefined).toBe(true);
    const routes = named("Secret", "streamkeeper-routes")!.stringData["routes.yaml"] as string;
    expect(parseRoutes(routes, "routes.yaml").map((route) => route.name)).toEqual(["users", "audit"]);
  });

  it("when each Deployment is read, then it runs one role of the image, probes /healthz and /readyz on its own ports, and runs locked down", () => {
    expect(deployments.map((deployment) => deployment.metadata.name).sort()).toEqual(["streamkeeper-receiver", "streamkeeper-worker"]);
    for (const deployment of deployments) {
      const pod = deployment.spec.template;
      expect(labelsMatch(deployment.spec.selector.matchLabels, pod.metadata.labels)).toBe(true);
      expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
      const [container] = pod.spec.containers as Doc[];
      const role = deployment.metadata.name.replace("streamkeeper-", "");
      expect(container!.args).toEqual(["start", "--role", role]);
      expect(container!.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });
      const ports = Object.fromEntries((container!.ports as Doc[]).map((port) => [port.name, port.containerPort]));
      expect(ports.admin).toBe(Number(configMap.data.ADMIN_PORT));
      if (role === "receiver") expect(ports.http).toBe(Number(configMap.data.PORT));
      else expect(ports.http).toBeUndefined(); // a worker has no public port
      expect(container!.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "admin" });
      expect(container!.readinessProbe.httpGet).toEqual({ path: "/readyz", port: role === "receiver" ? "http" : "admin" });
      for (const probe of [container!.livenessProbe, container!.readinessProbe, container!.startupProbe]) expect(Object.keys(ports)).toContain(probe.httpGet.port);
      expect(container!.envFrom.map((from: Doc) => from.configMapRef?.name ?? from.secretRef?.name).sort()).toEqual(["streamkeeper-config", "streamkeeper-secrets"]);
      for (const from of container!.envFrom as Doc[]) {
        if (from.configMapRef) expect(named("ConfigMap", from.configMapRef.name)).toBeDefined();
        if (from.secretRef) expect(named("Secret", from.secretRef.name)).toBeDefined();
      }
      // ROUTES_FILE lives on a mounted volume whose Secret exists.
      const mount = (container!.volumeMounts as Doc[]).find((volumeMount) => configMap.data.ROUTES_FILE.startsWith(`${volumeMount.mountPath}/`))!;
      const volume = (pod.spec.volumes as Doc[]).find((candidate) => candidate.name === mount.name)!;
      expect(named("Secret", volume.secret.secretName)!.stringData).toHaveProperty(configMap.data.ROUTES_FILE.slice(mount.mountPath.length + 1));
    }
  });

  it("when Services, HPAs, PDBs and the Ingress are read, then each points at a Deployment or Service that exists", () => {
    const podsOf = (selector: Record<string, string>) => deployments.filter((deployment) => labelsMatch(selector, deployment.spec.template.metadata.labels));
    for (const service of ofKind("Service")) {
      const pods = podsOf(service.spec.selector);
      expect(pods.length, service.metadata.name).toBeGreaterThan(0);
      for (const port of service.spec.ports as Doc[]) {
        for (const pod of pods) expect(pod.spec.template.spec.containers[0].ports.map((p: Doc) => p.name), service.metadata.name).toContain(port.targetPort);
      }
    }
    expect(podsOf(named("Service", "streamkeeper-admin")!.spec.selector)).toHaveLength(2);
    expect(named("Service", "streamkeeper-admin")!.spec.ports.map((port: Doc) => port.port)).toEqual([9090]);
    const hpas = ofKind("HorizontalPodAutoscaler");
    expect(hpas.map((hpa) => hpa.spec.scaleTargetRef.name).sort()).toEqual(["streamkeeper-receiver", "streamkeeper-worker"]);
    for (const hpa of hpas) expect(named("Deployment", hpa.spec.scaleTargetRef.name)).toBeDefined();
    for (const pdb of ofKind("PodDisruptionBudget")) expect(podsOf(pdb.spec.selector.matchLabels)).toHaveLength(1);
    for (const path of ofKind("Ingress")[0]!.spec.rules[0].http.paths as Doc[]) {
      const service = named("Service", path.backend.service.name)!;
      expect(service.spec.ports.map((port: Doc) => port.name)).toContain(path.backend.service.port.name);
      expect(podsOf(service.spec.selector).map((deployment) => deployment.metadata.name)).toEqual(["streamkeeper-receiver"]);
      expect(path.path).toBe("/webhooks");
    }
  });
});

function yamlDocs(path: string): Doc[] {
  return parseAllDocuments(read(path)).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors[0]!.message}`);
    return doc.toJS() as Doc;
  });
}

function readdirYaml(dir: string): Doc[] {
  const full = join(root, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full)
    .filter((file) => /\.ya?ml$/.test(file))
    .flatMap((file) => yamlDocs(join(dir, file)));
}

async function listJs(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile() && entry.name.endsWith(".js")).map((entry) => join(entry.parentPath, entry.name));
}
