import { Query } from "mingo";

/**
 * The operators a route's `filter` may use (docs/routes.md), with
 * `$options`, `$regex`'s flags. mingo knows more (`$where` runs JavaScript, `$expr` the
 * aggregation language): a route file is configuration, not code, so those are refused.
 */
export const filterOperators = ["$eq", "$ne", "$in", "$nin", "$exists", "$regex", "$options", "$gt", "$gte", "$lt", "$lte", "$and", "$or", "$nor", "$not", "$size", "$all", "$elemMatch"];

/** A filter that cannot be used, in our words. */
export class FilterError extends Error {}

/**
 * A route's filter as a test of one CloudEvent: MongoDB's query language over the whole
 * event, dotted paths included (`data.object.app_metadata.plan`), with mingo's semantics
 * (a bare value is `$eq`; a path through an array matches any element). Throws a
 * FilterError for an operator outside `filterOperators` or a query mingo refuses.
 */
export function compileFilter(filter: Record<string, unknown>): (event: object) => boolean {
  const unknown = operatorsIn(filter).find((operator) => !filterOperators.includes(operator));
  if (unknown) throw new FilterError(`unknown operator ${unknown}; use ${filterOperators.filter((operator) => operator !== "$options").join(" ")}`);
  let query: Query;
  try {
    query = new Query(filter, {});
  } catch (error) {
    throw new FilterError(`not a query: ${(error as Error).message}`);
  }
  return (event) => query.test(event as Record<string, unknown>);
}

/** Every `$` key anywhere in the query. */
function operatorsIn(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(operatorsIn);
  if (value === null || typeof value !== "object" || value instanceof RegExp) return [];
  return Object.entries(value).flatMap(([key, inner]) => [...(key.startsWith("$") ? [key] : []), ...operatorsIn(inner)]);
}
