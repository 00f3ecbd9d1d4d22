import { reconcileTotal } from "../metrics/registry.js";
import type { DryRunOutcome, Reconciler } from "../reconcile/create-reconciler.js";
import { outcomeLabel, type ReconcileOutcome } from "../reconcile/reconcile-job.js";
import { routeMatches } from "../routes/route.js";
import type { TenantClient } from "../tenant/create-tenant-client.js";
import type { DeliveryPage } from "../tenant/delivery-page.js";

export interface WindowResult {
  eventId: string;
  streamId: string;
  outcome: ReconcileOutcome | DryRunOutcome;
}

export interface SweepWindowOptions {
  tenant: Pick<TenantClient, "deliveryPages">;
  reconciler: Pick<Reconciler, "reconcileRecord" | "assessRecord">;
  streamId: string;
  /** Inclusive, whole seconds. */
  from: Date;
  /** Exclusive, whole seconds. */
  to: Date;
  /** An event type pattern as routes have them (`user.*`, `*`, an exact type). */
  type?: string;
  /** Store and send nothing; outcomes are would_recover, already_received, no_payload. */
  dryRun?: boolean;
  /** Each failed delivery's outcome, as it is known. */
  onResult?(result: WindowResult): void;
  /** After each page: renew a lease, or throw to stop (the window then counts as unread). */
  afterPage?(): Promise<void>;
}

export interface WindowFigures {
  /** List calls made (pages read). */
  pages: number;
  recovered: string[];
  /** Already here (by webhook, or an earlier sweep). */
  received: string[];
  /** Listed as failed and still not here: no payload, errors. */
  unrecovered: string[];
  /** Why each of `unrecovered` was not recovered (its outcome). */
  reasons: Record<string, string>;
  /** Spans whose failed deliveries could not all be listed (no id is known of those left out), and why. */
  unlisted: UnlistedSpan[];
}

export interface UnlistedSpan {
  from: string;
  to: string;
  reason: string;
}

/** Records handled at once: each costs Redis round trips only, no tenant call. */
const parallel = 20;

/** Records asked for per page: the list's most. */
const pageSize = 100;

/**
 * List calls one window may spend reading full cursorless pages again as halves: 6,400
 * failed deliveries. A tenant whose dates narrow nothing would otherwise be read down to
 * every second of the window.
 */
const splitPagesMax = 64;

/**
 * One window of one stream: every page of the tenant's failed deliveries between `from`
 * and `to` (docs/tenant.md#failed-deliveries: the list's order and which time the dates filter on are not
 * documented, so nothing here depends on either), each record reconciled from the list
 * itself (the page carries the event: no second call per id) through the reconciler's
 * path: ledger dedupe, the event store, reconcile priority below live events.
 */
export async function sweepWindow(options: SweepWindowOptions): Promise<WindowFigures> {
  const figures: WindowFigures = { pages: 0, recovered: [], received: [], unrecovered: [], reasons: {}, unlisted: [] };
  await sweepSpan(options, options.from.getTime(), options.to.getTime(), figures);
  return figures;
}

/**
 * The pages of `from` to `to`. A full page in the OpenAPI file's shape (a bare array, no
 * cursor) may hide more records: each half of the span is read instead, in the list's whole
 * seconds, down to one second or `splitPagesMax` calls, where what may be left is said unlisted.
 */
async function sweepSpan(options: SweepWindowOptions, from: number, to: number, figures: WindowFigures): Promise<void> {
  const { type } = options;
  const exactType = type !== undefined && !type.includes("*") ? [type] : undefined;
  const pages = options.tenant.deliveryPages(options.streamId, { statuses: ["failed"], eventTypes: exactType, dateFrom: new Date(from), dateTo: new Date(to), take: pageSize });
  for await (const page of pages) {
    figures.pages++;
    if (page.cursorless && page.deliveries.length + (page.unreadable?.length ?? 0) >= pageSize) {
      // As the list takes them: `from` down to its second, `to` up to the next.
      const [first, last] = [Math.floor(from / 1000), Math.ceil(to / 1000)];
      if (last - first > 1 && figures.pages < splitPagesMax) {
        const middle = (first + Math.floor((last - first) / 2)) * 1000;
        await options.afterPage?.();
        await sweepSpan(options, from, middle, figures);
        await sweepSpan(options, middle, to, figures);
        return;
      }
      const span = { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
      const why = last - first > 1 ? `${splitPagesMax} list calls did not narrow it (does the tenant filter on the dates?)` : "one second holds more than a page";
      figures.unlisted.push({ ...span, reason: `the tenant listed a full page with no cursor (a bare array) and ${why}: failed deliveries beyond its ${pageSize} cannot be listed; recover them by id` });
      if (!options.dryRun) reconcileTotal.inc({ outcome: "error" });
    }
    await reconcilePage(options, page, figures);
    await options.afterPage?.();
  }
}

/** Each record of one page through the reconciler, `parallel` at a time, into `figures`. */
async function reconcilePage(options: SweepWindowOptions, page: DeliveryPage, figures: WindowFigures): Promise<void> {
  const { type } = options;
  // Records the tenant sent in a shape we cannot read: unrecovered with their reason,
  // and the window goes on (README.md#the-sweep-failed-deliveries-found-without-being-told: one record never holds back the others).
  for (const record of page.unreadable ?? []) setAside(options, figures, record.id ?? `unreadable record ${record.index + 1} of page ${figures.pages}`, record.reason);
  const records = page.deliveries.filter((record) => type === undefined || routeMatches({ match: [type] }, record.event_type));
  for (let at = 0; at < records.length; at += parallel) {
    const results = await Promise.all(
      records.slice(at, at + parallel).map(async (record): Promise<WindowResult> => {
        if (options.dryRun) return options.reconciler.assessRecord(record);
        const result = await options.reconciler.reconcileRecord(record);
        reconcileTotal.inc({ outcome: outcomeLabel(result.outcome) });
        return { eventId: result.eventId, streamId: record.event_stream_id, outcome: result.outcome };
      }),
    );
    for (const result of results) {
      const list = result.outcome === "recovered" || result.outcome === "would_recover" ? figures.recovered : result.outcome === "already_received" ? figures.received : figures.unrecovered;
      list.push(result.eventId);
      if (list === figures.unrecovered) figures.reasons[result.eventId] = result.outcome;
      options.onResult?.(result);
    }
  }
}

/** What the window could not read: unrecovered, with why, counted as an error outcome. */
function setAside(options: SweepWindowOptions, figures: WindowFigures, eventId: string, reason: string): void {
  const result: WindowResult = { eventId, streamId: options.streamId, outcome: `error: ${reason}` };
  if (!options.dryRun) reconcileTotal.inc({ outcome: outcomeLabel(result.outcome as ReconcileOutcome) });
  figures.unrecovered.push(eventId);
  figures.reasons[eventId] = reason;
  options.onResult?.(result);
}
