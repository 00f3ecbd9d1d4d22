import type jsonata from "jsonata";

/**
 * The common transform, an object of field paths (`{"email": data.object.email, "ids":
 * {"user": data.object.user_id}, "kind": "contact"}`), evaluated without jsonata's
 * interpreter. jsonata 2.x evaluates every step of an expression as an async function (a
 * Promise, a frame lookup and its guardrail check per step), which for such an object
 * costs ~20 µs and ~13 times the garbage of the plain route's body per event measured
 * apart, and several times that in the pipeline (docs/benchmarks.md, "What a filter and a
 * transform cost"). This is jsonata's own evaluation of those node kinds (jsonata.js
 * 2.2: evaluatePath, evaluateStep, fn.lookup, evaluateGroupExpression and the unwrapping
 * of singleton sequences at the end of `evaluate`) written out synchronously, so the result
 * is the one jsonata gives; test/unit/routes/object-of-paths.test.ts checks it against the
 * installed jsonata on generated events, so an upgrade that changes them fails there.
 * Nothing in it loops but over the event, so it needs no timeout.
 */
export type ObjectOfPaths = (event: object) => unknown;

/** A node of jsonata's parsed expression as it is at run time (its ExprNode type lacks the kinds `path` and `unary`). */
type Node = { type: string; value?: unknown } & Record<string, unknown>;
type Sequence = unknown[] & { sequence?: true };

/** An object nested this deep is left to jsonata, whose `stack` guardrail (at 1,000 evaluation steps) is then far away. */
const maxNesting = 100;

/**
 * The expression as a plain function when it is an object constructor whose keys are
 * string literals, none twice in one object, and whose values are literals, paths of plain
 * field names, or such objects (or one such path or literal alone); undefined for anything
 * else (jsonata evaluates it). For an input that is no array: jsonata wraps an array
 * input in a sequence of its own first.
 */
export function compileObjectOfPaths(ast: jsonata.ExprNode): ObjectOfPaths | undefined {
  return compileValue(ast as unknown as Node, 0);
}

/** jsonata's node fields are checked exactly: a node with anything more (a predicate, a stage, a group, a focus) is not ours. */
function hasOnly(node: Node, fields: string[]): boolean {
  return Object.keys(node).every((field) => fields.includes(field));
}

function compileObject(node: Node, nesting: number): ObjectOfPaths | undefined {
  if (nesting > maxNesting || node.type !== "unary" || node.value !== "{" || !hasOnly(node, ["type", "value", "position", "lhs"])) return undefined;
  const pairs = node.lhs as unknown as [Node, Node][];
  const keys = pairs.map(([key]) => (key.type === "string" && hasOnly(key, ["type", "value", "position"]) ? (key.value as string) : undefined));
  // jsonata refuses its own flags as keys (D1013) and a key made twice (D1009): its errors, not ours.
  if (keys.some((key) => key === undefined || key === "_jsonata_lambda" || key === "_jsonata_function") || new Set(keys).size !== keys.length) return undefined;
  const values = pairs.map(([, value]) => compileValue(value, nesting));
  if (values.some((value) => value === undefined)) return undefined;
  return (input) => {
    // Like jsonata's: no prototype, so a "__proto__" key is a key.
    const result = Object.create(null) as Record<string, unknown>;
    for (let index = 0; index < keys.length; index++) {
      const value = values[index]!(input);
      if (value !== undefined) result[keys[index]!] = value;
    }
    return result;
  };
}

function compileValue(node: Node, nesting: number): ObjectOfPaths | undefined {
  if ((node.type === "string" || node.type === "number" || node.type === "value") && hasOnly(node, ["type", "value", "position"])) {
    const literal = node.value;
    return () => literal;
  }
  if (node.type === "unary") return compileObject(node, nesting + 1);
  if (node.type !== "path" || !hasOnly(node, ["type", "steps"])) return undefined;
  const steps = node.steps as Node[];
  if (!steps.every((step) => step.type === "name" && hasOnly(step, ["type", "value", "position"]))) return undefined;
  const names = steps.map((step) => step.value as string);
  return (input) => unwrap(evaluatePath(names, input));
}

/** jsonata's evaluatePath for steps that are all names: each step over every item of the last one's result. */
function evaluatePath(names: string[], input: unknown): Sequence | undefined {
  let items: Sequence = Array.isArray(input) ? input : sequenceOf(input);
  let result: Sequence | undefined;
  for (let index = 0; index < names.length; index++) {
    result = evaluateStep(names[index]!, items, index === names.length - 1);
    if (result.length === 0) break;
    items = result;
  }
  return result;
}

/** jsonata's evaluateStep: the name looked up in each item, flattened one level; a lone array at the last step kept as it is. */
function evaluateStep(name: string, items: Sequence, lastStep: boolean): Sequence {
  const found = sequenceOf();
  for (const item of items) {
    const value = unwrap(lookup(item, name));
    if (value !== undefined) found.push(value);
  }
  if (lastStep && found.length === 1 && Array.isArray(found[0]) && !isSequence(found[0])) return found[0] as Sequence;
  // jsonata also keeps whole an array its own constructors built (`cons`): these expressions build none.
  const flat = sequenceOf();
  for (const value of found) {
    if (!Array.isArray(value)) flat.push(value);
    else for (const inner of value) flat.push(inner);
  }
  return flat;
}

/** jsonata's fn.lookup: a field of an object, or of every object in an array (flattened one level). */
function lookup(input: unknown, key: string): unknown {
  if (Array.isArray(input)) {
    const result = sequenceOf();
    for (const item of input) {
      const value = lookup(item, key);
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const inner of value) result.push(inner);
      else result.push(value);
    }
    return result;
  }
  if (input === null || typeof input !== "object" || !Object.prototype.hasOwnProperty.call(input, key) || isJsonataFunction(input)) return undefined;
  return (input as Record<string, unknown>)[key];
}

/** jsonata's utils.isFunction for an object: one carrying its function flags is not looked into. */
function isJsonataFunction(input: object): boolean {
  const flags = input as { _jsonata_function?: unknown; _jsonata_lambda?: unknown };
  return flags._jsonata_function === true || flags._jsonata_lambda === true;
}

/** What jsonata's `evaluate` does with a step's result: an empty sequence is nothing, a singleton its one item. */
function unwrap(value: unknown): unknown {
  if (!isSequence(value)) return value;
  if (value.length === 0) return undefined;
  return value.length === 1 ? value[0] : value;
}

function sequenceOf(...items: unknown[]): Sequence {
  const sequence: Sequence = items;
  sequence.sequence = true;
  return sequence;
}

function isSequence(value: unknown): value is Sequence {
  return Array.isArray(value) && (value as Sequence).sequence === true;
}
