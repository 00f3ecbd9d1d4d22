import jsonata from "jsonata";
import { compileObjectOfPaths } from "./object-of-paths.js";

/** A transform that cannot be used, or that failed for one event, in our words. */
export class TransformError extends Error {}

/** A transform's nesting of JSONata evaluations at most: deeper is a runaway recursion (jsonata's `stack` guardrail). */
const maxDepth = 1000;

/** One event's body: the JSON text of the transform's result (at once for an object of paths, object-of-paths.ts). */
export type Transform = (event: object) => Promise<string> | string;

/**
 * A route's transform: a JSONata expression over the CloudEvent whose result, as JSON, is
 * the body sent. Parsed here, so a route whose expression does not parse never starts
 * (a TransformError). Each evaluation is bounded by `timeoutMs` through jsonata's own
 * guardrails (its `timeout` and `stack` options): checked as each step of the expression
 * begins, they stop a runaway expression from the inside, so it does not keep the CPU
 * after its time is up as a timer raced against it would. Their clock is the wall's: an
 * evaluation that spent less than a quarter of its time on the CPU was paused, not running
 * away, and is evaluated once more before it counts as past its time. An object of field
 * paths, the common transform, is evaluated as jsonata would without its interpreter
 * (object-of-paths.ts): it cannot run away. A result that is not JSON (none, or a
 * function) is a TransformError too.
 */
export function compileTransform(expression: string, timeoutMs: number): Transform {
  let compiled: jsonata.Expression;
  try {
    compiled = jsonata(expression, { timeout: timeoutMs, stack: maxDepth });
  } catch (error) {
    throw new TransformError(`does not parse: ${jsonataMessage(error)}`);
  }
  const objectOfPaths = compileObjectOfPaths(compiled.ast());
  const evaluate = async (event: object, again = true): Promise<unknown> => {
    const cpuBefore = process.cpuUsage();
    try {
      return await compiled.evaluate(event);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code !== "D1012") throw new TransformError(`failed: ${jsonataMessage(error)}`);
      // jsonata's limit is wall time. Where the process spent less than a quarter of it on
      // the CPU, it was paused (a machine or container starved of CPU), not running away:
      // evaluated once more rather than made a dead letter. A runaway expression is on the
      // CPU all along, so it is stopped at the limit, or at twice it on such a machine.
      const { user, system } = process.cpuUsage(cpuBefore);
      if (again && (user + system) / 1000 < timeoutMs / 4) return evaluate(event, false);
      throw new TransformError(`ran past TRANSFORM_TIMEOUT_MS (${timeoutMs} ms)`);
    }
  };
  if (!objectOfPaths) return async (event) => bodyOf(await evaluate(event));
  return (event) => (Array.isArray(event) ? evaluate(event).then(bodyOf) : bodyOf(objectOfPaths(event)));
}

function bodyOf(result: unknown): string {
  const body = result === undefined || typeof result === "function" ? undefined : JSON.stringify(result);
  if (body === undefined) throw new TransformError("gave no JSON value to send (it selected nothing, or a function)");
  return body;
}

/** jsonata throws plain objects with a code, a message and the position in the expression. */
function jsonataMessage(error: unknown): string {
  const { code, message, position } = error as { code?: string; message?: string; position?: number };
  return `${message ?? String(error)}${code ? ` (${code}${position === undefined ? "" : ` at character ${position}`})` : ""}`;
}
