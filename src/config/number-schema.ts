import { z } from "zod";

export interface NumberRule {
  /** Only whole numbers. */
  whole?: boolean;
  /** The smallest allowed value (inclusive). */
  min?: number;
  /** Values must be above this (exclusive), e.g. 0 for "positive". */
  above?: number;
  /** The largest allowed value (inclusive). */
  max?: number;
  /** "fraction" and the like, instead of "number". */
  noun?: string;
  /** What is counted, e.g. "seconds"; the message reads "a whole number of seconds". */
  unit?: string;
  /** A value to show, e.g. "0.5". */
  example?: string;
  /** Added after the range, e.g. "0 turns it off". */
  note?: string;
  /** Parse from text (settings come from the environment); routes files give numbers. */
  coerce?: boolean;
}

/**
 * A number schema whose every failure (not a number, not whole, out of range) says, in our
 * words, what to give: "give a whole number of seconds, 0 or more; 0 turns it off", rather
 * than zod's "Invalid input: expected number, received NaN". One message per rule, built
 * from it, so settings and routes fields read alike.
 */
export function numberSchema(rule: NumberRule): z.ZodNumber {
  // One problem per value: the first failed check ends it (-1.5 is not whole and too small, one message).
  const check = { error: numberMessage(rule), abort: true };
  // A coerced number has the same checks; only its input type (unknown) differs.
  let schema = rule.coerce ? (z.coerce.number(check) as unknown as z.ZodNumber) : z.number(check);
  if (rule.whole) schema = schema.int(check);
  if (rule.min !== undefined) schema = schema.min(rule.min, check);
  if (rule.above !== undefined) schema = schema.gt(rule.above, check);
  if (rule.max !== undefined) schema = schema.max(rule.max, check);
  return schema;
}

function numberMessage({ whole, min, above, max, noun = "number", unit, example, note }: NumberRule): string {
  const kind = `${whole ? `a whole ${noun}` : `a ${noun}`}${unit ? ` of ${unit}` : ""}`;
  const lowest = min !== undefined ? `${min}` : above !== undefined ? `above ${above}` : undefined;
  let range = "";
  if (min !== undefined && max !== undefined) range = ` from ${min} to ${max}`;
  else if (lowest !== undefined && max !== undefined) range = ` ${lowest} and up to ${max}`;
  else if (min !== undefined) range = `, ${min} or more`;
  else if (above !== undefined) range = ` ${lowest}`;
  else if (max !== undefined) range = ` up to ${max}`;
  return `give ${kind}${range}${example ? `, e.g. ${example}` : ""}${note ? `; ${note}` : ""}`;
}
