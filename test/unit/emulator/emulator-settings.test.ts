import { describe, expect, it } from "vitest";
import { EmulatorSettingsError, emulatorSettings } from "../../../src/emulator/emulator-settings.js";

describe("emulatorSettings", () => {
  it("when nothing is set, then port 4010, time scale 1, no rate limit and auto-disable after 500 failures", () => {
    expect(emulatorSettings({})).toEqual({
      port: 4010, timeScale: 1, rateLimit: undefined, rateLimitMode: "bucket", clientId: undefined, clientSecret: undefined, disableAfterConsecutiveFailures: 500,
      eventsHeartbeatSeconds: 15, eventsCycleSeconds: 300, eventsRetentionSeconds: undefined, eventsConnections: 1,
    });
  });

  it("when the Events API settings are set, then fractions of seconds are taken, and a bad one is named", () => {
    const env = { EMULATOR_EVENTS_HEARTBEAT_SECONDS: "0.2", EMULATOR_EVENTS_CYCLE_SECONDS: "2", EMULATOR_EVENTS_RETENTION_SECONDS: "1.5", EMULATOR_EVENTS_CONNECTIONS: "4" };
    expect(emulatorSettings(env)).toMatchObject({ eventsHeartbeatSeconds: 0.2, eventsCycleSeconds: 2, eventsRetentionSeconds: 1.5, eventsConnections: 4 });
    expect(() => emulatorSettings({ EMULATOR_EVENTS_CONNECTIONS: "0", EMULATOR_EVENTS_CYCLE_SECONDS: "never" })).toThrow(/EMULATOR_EVENTS_CYCLE_SECONDS="never": give seconds.*EMULATOR_EVENTS_CONNECTIONS="0": give at least 1/);
  });

  it("when the settings are set, then they are used, and --port wins over EMULATOR_PORT", () => {
    const env = { EMULATOR_PORT: "5000", EMULATOR_CLIENT_ID: "id", EMULATOR_CLIENT_SECRET: "secret", EMULATOR_TIME_SCALE: "0.01", EMULATOR_RATE_LIMIT: "10", EMULATOR_RATE_LIMIT_MODE: "window", EMULATOR_AUTO_DISABLE_AFTER: "3" };
    expect(emulatorSettings(env)).toMatchObject({ port: 5000, clientId: "id", clientSecret: "secret", timeScale: 0.01, rateLimit: 10, rateLimitMode: "window", disableAfterConsecutiveFailures: 3 });
    expect(emulatorSettings(env, { port: "0" }).port).toBe(0);
  });

  it("when values are bad, then every bad one is named with what to give", () => {
    const error = (() => {
      try {
        emulatorSettings({ EMULATOR_PORT: "70000", EMULATOR_TIME_SCALE: "fast", EMULATOR_RATE_LIMIT: "0", EMULATOR_RATE_LIMIT_MODE: "fixed", EMULATOR_AUTO_DISABLE_AFTER: "0" });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(EmulatorSettingsError);
    expect((error as Error).message).toMatch(/EMULATOR_PORT="70000": give a port.*EMULATOR_TIME_SCALE="fast".*EMULATOR_AUTO_DISABLE_AFTER="0": give at least 1.*EMULATOR_RATE_LIMIT="0".*EMULATOR_RATE_LIMIT_MODE="fixed": give bucket \(refills continuously\) or window/);
    expect(() => emulatorSettings({}, { port: "x" })).toThrow(/--port/);
  });
});
