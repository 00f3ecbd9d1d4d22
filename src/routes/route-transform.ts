import jsonata from "jsonata";

/** A transform that cannot be used, or that failed for one event, in our words. */
export class TransformError extends Error {}

/** A transform's nesting of JSONata evaluations at most: deeper is a runaway recursion (jsonata's `stack` guardrail). */
const maxDepth = 1000;

/** One event's body: the JSON text of the transform's result. */
export type Transform = (event: object) => Promise<string>;

/**
 * A route's transform: a JSONata expression over the CloudEvent whose result, as JSON, is
 * the body sent. Parsed here, so a route whose expression does not parse never starts
 * (a TransformError). Each evaluation is bounded by `timeoutMs` through jsonata's own
 * guardrails (its `timeout` and `stack` options): checked as each step of the expression
 * begins, they stop a runaway expression from the inside, so it does not keep the CPU
 * after its time is up as a timer raced against it would. A result that is not JSON (none,
 * or a function) is a TransformError too; a function inside the result is left out, as
 * JSON.stringify leaves out JavaScript's.
 */
export function compileTransform(expression: string, timeoutMs: number): Transform {
  let compiled: jsonata.Expression;
  try {
    compiled = jsonata(expression, { timeout: timeoutMs, stack: maxDepth });
  } catch (error) {
    throw new TransformError(`does not parse: ${jsonataMessage(error)}`);
  }
  return async (event) => {
    let result: unknown;
    try {
      result = await compiled.evaluate(event);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === "D1012") throw new TransformError(`ran past TRANSFORM_TIMEOUT_MS (${timeoutMs} ms)`);
      throw new TransformError(`failed: ${jsonataMessage(error)}`);
    }
    const body = jsonOf(result);
    if (body === undefined) throw new TransformError("gave no JSON value to send (it selected nothing, or a function)");
    return body;
  };
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
