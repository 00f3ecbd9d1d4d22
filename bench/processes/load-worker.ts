import type { LoadOptions } from "../lib/load-types.js";
import { runAutocannon } from "../lib/run-autocannon.js";
import { runPaced } from "../lib/run-paced.js";

/**
 * One load run in its own process, so the load generator never shares an event loop with
 * what it measures. Options come as JSON in argv[2]; the result is one JSON line on stdout.
 */
const options = JSON.parse(process.argv[2] ?? "{}") as LoadOptions;
const result = options.paced ? await runPaced(options) : await runAutocannon(options);
process.stdout.write(`${JSON.stringify(result)}\n`);
