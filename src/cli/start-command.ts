import { Option, type Command } from "commander";
import type { Role } from "../app.js";
import { loadConfig } from "../config/config.js";
import { createLogger, logFormatOf } from "../logging/logger.js";
import { runAction } from "./run-action.js";

export function registerStartCommand(program: Command) {
  program
    .command("start")
    .description("run the service: webhook ingress, delivery workers, admin surface")
    .addOption(new Option("--role <role>", "which part to run").choices(["all", "receiver", "worker"]).default("all"))
    .action(
      runAction(async (options: { role: Role }) => {
        const config = loadConfig();
        const logger = createLogger(config.env.LOG_LEVEL, undefined, logFormatOf(config.env.LOG_FORMAT, process.stdout.isTTY === true));
        try {
          // Loaded here, not at the top: every other command starts without the whole service.
          const { startService } = await import("../app.js");
          const service = await startService(config, logger, options.role);
          await new Promise<void>((ok) => {
            let signals = 0;
            // The first signal stops cleanly; a second one (another Ctrl-C) shortens the wait:
            // in-flight deliveries go back to their queue (not lost, not sent twice needlessly),
            // and the rest of the stop still runs, the embedded Redis this process leads included.
            const stop = (signal: string) => {
              signals++;
              if (signals === 2) {
                // The dispatcher says how many deliveries it cut, if any (shutdown/close-workers.ts).
                logger.warn({ signal }, "second signal: stopping now, without waiting for deliveries in flight");
                return service.hurry();
              }
              if (signals > 2) return;
              logger.info({ signal }, "shutting down: no new requests, finishing in-flight work");
              service.close().then(ok, (error) => {
                logger.error({ err: error }, "shutdown failed");
                ok();
              });
            };
            process.on("SIGTERM", () => stop("SIGTERM"));
            process.on("SIGINT", () => stop("SIGINT"));
            // A closed terminal: the same clean stop, so the embedded Redis is released.
            process.on("SIGHUP", () => stop("SIGHUP"));
          });
          logger.info("stopped");
        } finally {
          // Stopped or failed half-way: nothing left open (a reconnect timer of a client
          // whose Redis never came back, the timers of workers dropped while Redis was away,
          // a port already bound) may keep the process alive. Everything worth waiting for
          // was awaited above, and the log is written synchronously.
          setTimeout(() => process.exit(), 250).unref();
        }
      }),
    );
}
