import { ApiError } from "./api-error.js";

export interface Page<T> {
  items: T[];
  /** Absent on the last page (docs/tenant.md#event-streams). */
  next?: string;
}

/**
 * One forward-only page of `items` (already in their stable order). The cursor is opaque
 * to callers: base64url of the id of the first item of the next page.
 */
export function paginate<T extends { id: string }>(items: T[], from: string | undefined, take: number): Page<T> {
  let start = 0;
  if (from !== undefined) {
    const id = decodeCursor(from);
    start = id === undefined ? -1 : items.findIndex((item) => item.id === id);
    if (start < 0) throw new ApiError(400, "Query validation error: 'Invalid or expired cursor' on property from.", "invalid_query_string");
  }
  const page = items.slice(start, start + take);
  const following = items[start + take];
  return following ? { items: page, next: encodeCursor(following.id) } : { items: page };
}

function encodeCursor(id: string): string {
  return Buffer.from(`c1:${id}`).toString("base64url");
}

function decodeCursor(cursor: string): string | undefined {
  const text = Buffer.from(cursor, "base64url").toString();
  return text.startsWith("c1:") ? text.slice(3) : undefined;
}
