import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { capturedLogger, type CapturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

describe("ingress: events with unusual ids are logged summarised", () => {
  let sink: SinkServer;
  let service: TestService;
  let captured: CapturedLogger;
  beforeAll(async () => {
    sink = await startSinkServer();
    captured = capturedLogger("info");
    service = await startTestService({ DOWNSTREAM_URL: sink.url, LOG_LEVEL: "info" }, "all", captured.logger);
  });
  afterAll(async () => {
    await service.close();
    await sink.close();
  });

  it("when 30 events with short ids arrive within the repeat interval, then one warning line is written, and all 30 are stored", async () => {
    for (let index = 0; index < 30; index++) {
      const res = await service.post("/webhooks", JSON.stringify(userEvent({ id: `short-${index}-${Date.now()}` })));
      expect(res.status).toBe(202);
    }
    await sink.untilReceived(30);
    const warnings = captured.lines.filter((line) => String(line.msg).startsWith("stored an event that breaks the tenant's rules"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, broken: ["id_length"] });
  });
});

describe("settings: the circuit's longest probe interval", () => {
  it("when DISPATCH_CIRCUIT_PROBE_MAX_MS is not set, then a recovered downstream is probed within a minute", () => {
    expect(loadConfig({}).env.DISPATCH_CIRCUIT_PROBE_MAX_MS).toBeLessThan(60_000);
  });
});
