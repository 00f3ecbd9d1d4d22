import { z } from "zod";
import type { EmulatorOptions } from "./start-emulator.js";

const port = z.coerce.number({ error: "give a port number from 0 to 65535" }).int("give a port number from 0 to 65535").min(0, "give a port number from 0 to 65535").max(65535, "give a port number from 0 to 65535");
const optional = z.string().trim().min(1).optional();
/** Seconds, fractions allowed so tests run the Events API's periods fast. */
const seconds = z.coerce.number({ error: "give seconds, e.g. 15 or 0.5" }).positive("give seconds above 0, e.g. 15 or 0.5");

/**
 * The emulator's own settings (README.md#settings). It is not the
 * service, so they are parsed here rather than in config.ts.
 */
const schema = z.object({
  EMULATOR_PORT: port.default(4010),
  EMULATOR_CLIENT_ID: optional,
  EMULATOR_CLIENT_SECRET: optional,
  EMULATOR_TIME_SCALE: z.coerce.number({ error: "give a number, 1 for real retry delays or e.g. 0.01" }).min(0, "give a number >= 0").default(1),
  EMULATOR_AUTO_DISABLE_AFTER: z.coerce
    .number({ error: "give a whole number of consecutive failed deliveries, e.g. 500 (the tenant's)" })
    .int("give a whole number of consecutive failed deliveries, e.g. 500 (the tenant's)")
    .min(1, "give at least 1")
    .default(500),
  EMULATOR_EVENTS_HEARTBEAT_SECONDS: seconds.default(15),
  EMULATOR_EVENTS_CYCLE_SECONDS: seconds.default(300),
  EMULATOR_EVENTS_RETENTION_SECONDS: seconds.optional(),
  EMULATOR_EVENTS_CONNECTIONS: z.coerce.number({ error: "give a whole number of connections, e.g. 1 (free plan), 4 or 8" }).int("give a whole number of connections, e.g. 1 (free plan), 4 or 8").min(1, "give at least 1").default(1),
  EMULATOR_RATE_LIMIT: z.coerce.number({ error: "give requests per second, e.g. 10, or leave it unset for no limit" }).positive("give a number > 0, or leave it unset for no limit").optional(),
  EMULATOR_RATE_LIMIT_MODE: z.enum(["bucket", "window"], { error: "give bucket (refills continuously) or window (refills all at once at the end of each second)" }).default("bucket"),
});

/** Thrown with every bad value named; the CLI turns it into `error: ...` and exit 2. */
export class EmulatorSettingsError extends Error {
  override name = "EmulatorSettingsError";
}

/** Options for `startEmulator` from the environment; a `--port` flag wins over `EMULATOR_PORT`. */
export function emulatorSettings(env: Record<string, string | undefined>, flags: { port?: string } = {}): EmulatorOptions {
  const blankless = Object.fromEntries(Object.entries(env).filter(([key, value]) => key.startsWith("EMULATOR_") && value !== ""));
  const parsed = schema.safeParse(blankless);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${String(issue.path[0])}=${JSON.stringify(blankless[String(issue.path[0])])}: ${issue.message}`);
    throw new EmulatorSettingsError(problems.join("; "));
  }
  const options: EmulatorOptions = {
    port: parsed.data.EMULATOR_PORT,
    timeScale: parsed.data.EMULATOR_TIME_SCALE,
    rateLimit: parsed.data.EMULATOR_RATE_LIMIT,
    rateLimitMode: parsed.data.EMULATOR_RATE_LIMIT_MODE,
    disableAfterConsecutiveFailures: parsed.data.EMULATOR_AUTO_DISABLE_AFTER,
    clientId: parsed.data.EMULATOR_CLIENT_ID,
    clientSecret: parsed.data.EMULATOR_CLIENT_SECRET,
    eventsHeartbeatSeconds: parsed.data.EMULATOR_EVENTS_HEARTBEAT_SECONDS,
    eventsCycleSeconds: parsed.data.EMULATOR_EVENTS_CYCLE_SECONDS,
    eventsRetentionSeconds: parsed.data.EMULATOR_EVENTS_RETENTION_SECONDS,
    eventsConnections: parsed.data.EMULATOR_EVENTS_CONNECTIONS,
  };
  if (flags.port !== undefined) {
    const flag = port.safeParse(flags.port);
    if (!flag.success) throw new EmulatorSettingsError(`--port: give a port number from 0 to 65535, not ${JSON.stringify(flags.port)}`);
    options.port = flag.data;
  }
  return options;
}
