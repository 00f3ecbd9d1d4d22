import { plainProblem } from "../errors/http-answer.js";
import type { DeliveryQueues } from "../queue/delivery-queues.js";
import { deadLetterOf, routeOf, type DeadLetter } from "./list-dead-letters.js";

export interface DeadLetterPage {
  deadLetters: DeadLetter[];
  /** Where the next page starts (opaque); absent on the last page. */
  next?: string;
}

/** Where a page starts: a route and an offset into its failed jobs, most recent first. */
interface Cursor {
  route: string;
  offset: number;
}

export class BadCursorError extends Error {
  readonly httpStatus = 400;
  readonly problemType = plainProblem;
  constructor() {
    super("after: not a cursor this service gave out; pass the `next` of the previous page, or leave it out for the first page");
    this.name = "BadCursorError";
  }
}

/**
 * One page of dead letters, route by route, the most recent first (GET /admin/dead-letters):
 * at most `limit` read from Redis per call, however many a long outage left. A letter
 * replayed between two pages shifts the offsets: a page may then repeat or skip one, and
 * reading again from the start shows the truth.
 */
export async function pageDeadLetters(queues: DeliveryQueues, options: { after?: string; limit: number }): Promise<DeadLetterPage> {
  const all = queues.all();
  const start = options.after === undefined ? { route: routeOf(all[0]!), offset: 0 } : parseCursor(options.after);
  let index = all.findIndex((queue) => routeOf(queue) === start.route);
  if (index < 0) return { deadLetters: [] };
  let offset = start.offset;
  const deadLetters: DeadLetter[] = [];
  while (index < all.length && deadLetters.length < options.limit) {
    const queue = all[index]!;
    const wanted = options.limit - deadLetters.length;
    // Ids first: a job removed between the read of the range and of the job is left out
    // of the page, and does not make the route look read to its end.
    const ids = await queue.getRanges(["failed"], offset, offset + wanted - 1);
    const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
    deadLetters.push(...jobs.filter((job) => job !== undefined).map((job) => deadLetterOf(routeOf(queue), job)));
    if (ids.length < wanted) {
      index++;
      offset = 0;
    } else offset += ids.length;
  }
  if (index >= all.length) return { deadLetters };
  return { deadLetters, next: Buffer.from(JSON.stringify({ route: routeOf(all[index]!), offset })).toString("base64url") };
}

function parseCursor(text: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as Partial<Cursor>;
    if (typeof value.route === "string" && Number.isInteger(value.offset) && value.offset! >= 0) return { route: value.route, offset: value.offset! };
  } catch {
    // reported below
  }
  throw new BadCursorError();
}
