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
 * function) is a TransformError too; a function inside the result is left out, as
 * JSON.stringify leaves out JavaScript's.
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
  const evaluated = async (event: object) => bodyOf(jsonOf(await evaluate(event)));
  if (!objectOfPaths) return evaluated;
  // An object of paths holds the event's own values: JSON, no function to leave out.
  return (event) => (Array.isArray(event) ? evaluated(event) : bodyOf(JSON.stringify(objectOfPaths(event))));
}

function bodyOf(body: string | undefined): string {
  if (body === undefined) throw new TransformError("gave no JSON value to send (it selected nothing, or a function)");
  return body;
}

/** A function as jsonata gives one: an object marked as its built-in or as a lambda (whose scope is circular). */
function isFunction(value: unknown): boolean {
  return typeof value === "function" || (typeof value === "object" && value !== null && ("_jsonata_function" in value || "_jsonata_lambda" in value));
}

/** The result as JSON text, its functions left out as JSON leaves out JavaScript's; undefined when nothing is left. */
function jsonOf(result: unknown): string | undefined {
  return JSON.stringify(result, (_key, value: unknown) => (isFunction(value) ? undefined : value));
}

/** jsonata throws plain objects with a code, a message and the position in the expression. */
function jsonataMessage(error: unknown): string {
  const { code, message, position } = error as { code?: string; message?: string; position?: number };
  return `${message ?? String(error)}${code ? ` (${code}${position === undefined ? "" : ` at character ${position}`})` : ""}`;
}
