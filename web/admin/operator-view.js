/* global document, window, fetch, URL, URLSearchParams, setTimeout */
// The operator view (docs/operating.md, "The operator view"): polls GET /admin/overview and
// GET /admin/replays every few seconds and renders them (the health line, pull, archive,
// removed routes, streams, routes and their last hour, replays); search, timeline, replay
// and dead letters call the admin API as the README documents it, and say so plainly where
// this service lacks an endpoint (the archive off). Time fields are sent as typed: the
// service reads them as the CLI does (90m, 2h, 7d, 2026-12-07, an ISO time).
// Everything from the server is put in the page as text, never as HTML.

const params = new URLSearchParams(window.location.search);
const refreshSeconds = Math.min(60, Math.max(1, Number(params.get("refresh")) || 5));
/**
 * The admin API's base, /admin/, without the user name and password a URL such as
 * http://ops:<token>@host/admin/ carries: fetch refuses a URL with credentials, and the
 * page's relative paths would inherit them. The browser sends the login it keeps for the page.
 */
const api = new URL(".", window.location.href);
api.username = "";
api.password = "";
let routes = [];

// ---------- small helpers ----------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof window.Node ? child : String(child));
  }
  return node;
}

function cell(value, className) {
  return el("td", { class: className }, value === null || value === undefined ? "unknown" : value);
}

function seconds(value) {
  if (value === null || value === undefined) return "–";
  if (value < 1) return `${Math.round(value * 1000)} ms`;
  if (value < 120) return `${Math.round(value * 10) / 10} s`;
  if (value < 7200) return `${Math.round(value / 60)} min`;
  return `${Math.round(value / 360) / 10} h`;
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "never";
}

class Unavailable extends Error {}

/** Calls the admin API; a 404 or 503 from an endpoint this version lacks is `Unavailable`. */
async function call(method, path, body) {
  const response = await fetch(new URL(path, api), {
    method,
    headers: body === undefined ? { accept: "application/json" } : { accept: "application/json", "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const text = await response.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (response.ok) return json;
  const detail = (json && (json.detail || json.title)) || `${response.status} ${response.statusText}`;
  if ((response.status === 404 && /no route for/.test(detail)) || response.status === 503) throw new Unavailable(detail);
  const error = new Error(detail);
  error.status = response.status;
  throw error;
}

function explain(error, what) {
  if (error instanceof Unavailable) return el("p", { class: "unavailable" }, `${what} is not available in this version (or the archive is off or unreachable): ${error.message}`);
  if (error.status === 403) return el("p", { class: "problem" }, `Not allowed: ${error.message}. Writes need ADMIN_TOKEN.`);
  return el("p", { class: "problem" }, `${what} failed: ${error.message}`);
}

function replaceChildren(id, ...children) {
  document.getElementById(id).replaceChildren(...children);
}

// ---------- the overview ----------

function renderStreams(overview) {
  const { sweep, streams } = overview;
  const summary = sweep.on
    ? `Sweep on${sweep.streams ? ` for streams ${sweep.streams.join(", ")}` : ""}${sweep.publicUrl ? ` pointing at ${sweep.publicUrl}` : ""}.`
    : `Sweep off: ${sweep.whyOff}. Failed deliveries are not recovered by themselves.`;
  replaceChildren("sweep-summary", summary);
  const rows = streams.map((stream) =>
    el(
      "tr",
      { "data-stream": stream.streamId },
      el("th", { scope: "row" }, stream.streamId),
      cell(stream.status === null ? "not read yet" : stream.status === "disabled" ? "disabled: the tenant sends and keeps nothing" : "enabled", stream.status === "disabled" ? "bad status" : stream.status === "enabled" ? "ok status" : "muted status"),
      cell(seconds(stream.sweepLagSeconds), "number"),
      cell(stream.found, "number"),
      cell(stream.recovered, "number"),
      cell(stream.unrecovered, stream.unrecovered > 0 ? "number bad" : "number"),
      cell(when(stream.lastRunAt)),
      cell(stream.lastError ?? "none", stream.lastError ? "bad" : "muted"),
    ),
  );
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 8, class: "muted" }, "No stream swept or watched yet.")));
  document.querySelector("#streams tbody").replaceChildren(...rows);
}

function freshnessText(window) {
  if (!window) return "unknown";
  if (window.count === 0) return "no live events";
  return `${seconds(window.p50)} / ${seconds(window.p99)} (${window.count})`;
}

function objectiveText(route) {
  const { objectiveSeconds, last5m, lastDay } = route.freshness;
  if (objectiveSeconds === null) return ["none set", "muted"];
  const verdict = last5m?.verdict === "no_events" ? lastDay?.verdict : last5m?.verdict;
  if (verdict === "missed") {
    const late = last5m?.verdict === "missed" ? last5m : lastDay;
    return [`${seconds(objectiveSeconds)}: missed (${late.missed} of ${late.count} late)`, "bad"];
  }
  if (verdict === "met") return [`${seconds(objectiveSeconds)}: met`, "ok"];
  return [`${seconds(objectiveSeconds)}: no live events`, "muted"];
}

/** The route's filter, test-event rule and transform (docs/routes.md), as `streamkeeper routes list` shows them. */
function shapeText(route) {
  const parts = [route.filter && `filter ${JSON.stringify(route.filter)}`, route.testEvents === "drop" && "drop tests", route.transform && `transform ${route.transform.replace(/\s+/g, " ")}`];
  return parts.filter(Boolean).join("; ") || "every event, as sent";
}

function renderRoutes(overview) {
  routes = overview.routes;
  const rows = overview.routes.map((route) => {
    const [objective, objectiveClass] = objectiveText(route);
    return el(
      "tr",
      { "data-route": route.name },
      el("th", { scope: "row" }, route.name),
      cell(route.deliveredPerMinute, "number"),
      cell(route.lanes ? `${route.backlog} (live ${route.lanes.live}, late ${route.lanes.late})` : route.backlog, "number"),
      cell(route.oldestWaitingSeconds === 0 ? "none waiting" : seconds(route.oldestWaitingSeconds), route.oldestWaitingSeconds > 300 ? "number warn" : "number"),
      cell(route.circuit === "open" ? "open: not sending, probing" : route.circuit, route.circuit === "open" ? "bad circuit" : "circuit"),
      cell(route.ratePerSecond === null ? "none" : `${route.ratePerSecond}/s`),
      cell(route.deadLetters, route.deadLetters > 0 ? "number bad" : "number"),
      cell(route.staleLastDay, "number"),
      cell(freshnessText(route.freshness.last5m), "freshness-5m"),
      cell(freshnessText(route.freshness.lastDay), "freshness-day"),
      cell(objective, `${objectiveClass} objective`),
      cell(shapeText(route), "shape"),
    );
  });
  document.querySelector("#routes tbody").replaceChildren(...rows);
  const select = document.querySelector("#replay select[name=route]");
  const names = overview.routes.map((route) => route.name);
  if ([...select.options].map((option) => option.value).join() !== names.join()) {
    select.replaceChildren(...names.map((name) => el("option", { value: name }, name)));
  }
}

function renderRecovery(overview) {
  const reconcile = overview.recovery.reconcile;
  replaceChildren(
    "reconcile-summary",
    reconcile === null
      ? "Reconcile queue: unknown right now."
      : `Reconcile jobs (recoveries from the tenant's delivery history): ${reconcile.waiting} waiting, ${reconcile.active} running, ${reconcile.delayed} retrying, ${reconcile.failed} failed; oldest waiting ${seconds(reconcile.oldestWaitingSeconds)}.`,
  );
}

function renderHealth(overview) {
  const health = document.getElementById("health");
  health.className = overview.health.length === 0 ? "health ok" : "health bad";
  health.replaceChildren(overview.health.length === 0 ? "All well: nothing needs attention now." : `Needs attention: ${overview.health.join("; ")}.`);
}

function pullText(pull) {
  if (pull === null) return ["unknown", "muted"];
  if (pull.state === "off") return ["off (PULL=off): events arrive by push only", "muted"];
  const last = pull.lastEventAt ? `, last event ${when(pull.lastEventAt)}` : "";
  if (pull.lastError) return [`${pull.state}: ${pull.lastError}${last}`, "bad"];
  return [`${pull.state}${last}`, pull.state === "connected" ? "ok" : "warn"];
}

function archiveText(archive) {
  if (archive === null) return ["unknown", "muted"];
  if (archive.state === "off") return [`off (${archive.detail}): no search or replay`, "muted"];
  const lag = archive.lagSeconds === null ? "" : `, outbox ${archive.lagSeconds === 0 ? "empty" : `${seconds(archive.lagSeconds)} behind`}`;
  return [`${archive.state}${archive.detail ? `: ${archive.detail}` : ""}${lag}`, archive.state === "up" ? "ok" : "bad"];
}

function renderService(overview) {
  const removed = overview.removedRoutes;
  const rows = [
    ["Pull from the tenant", ...pullText(overview.pull)],
    ["Archive", ...archiveText(overview.archive)],
    [
      "Removed routes holding events",
      removed === null ? "unknown" : removed.length === 0 ? "none" : removed.map((route) => `${route.name}: ${route.waiting} waiting`).join(", "),
      removed?.length ? "bad" : "muted",
    ],
  ];
  document.querySelector("#service tbody").replaceChildren(...rows.map(([name, text, className]) => el("tr", {}, el("th", { scope: "row" }, name), cell(text, className))));
}

const svgNs = "http://www.w3.org/2000/svg";

function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(svgNs, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  node.append(...children);
  return node;
}

/** One small chart of a route's last hour: a line per series (null: no figure that minute), scaled to the highest value. */
function chart(title, series, format) {
  const width = 300;
  const height = 60;
  const values = series.flatMap((line) => line.values).filter((value) => value !== null);
  const top = values.length ? Math.max(...values) : 0;
  const x = (index, count) => (index / Math.max(1, count - 1)) * (width - 4) + 2;
  const y = (value) => height - 2 - (value / (top || 1)) * (height - 8);
  const lines = series.flatMap((line) => {
    // Split at the minutes with no figure, so a gap shows as a gap; a lone minute is a dot.
    const segments = [[]];
    line.values.forEach((value, index) => (value === null ? segments.push([]) : segments.at(-1).push([x(index, line.values.length), y(value)])));
    return segments
      .filter((points) => points.length > 0)
      .map((points) => (points.length === 1 ? svg("circle", { cx: points[0][0], cy: points[0][1], r: 2, class: line.className }) : svg("polyline", { points: points.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(" "), class: line.className })));
  });
  const latest = series[0].values.findLast((value) => value !== null) ?? null;
  const latestText = latest === null ? "none" : format(latest);
  const topText = values.length ? format(top) : "none";
  const label = `${title}, last hour: latest ${latestText}, highest ${topText}`;
  const picture = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": label }, svg("line", { x1: 0, y1: height - 1, x2: width, y2: height - 1, class: "axis" }), ...lines);
  return el("div", { class: "chart" }, el("span", { class: "chart-title" }, title), picture, el("span", { class: "chart-now" }, `latest ${latestText} · highest ${topText}`));
}

function renderCharts(overview) {
  const cards = overview.routes.map((route) => {
    const hour = route.lastHour;
    if (!hour) return el("figure", { class: "route-charts", "data-route": route.name }, el("figcaption", {}, route.name), el("p", { class: "muted" }, "unknown right now"));
    return el(
      "figure",
      { class: "route-charts", "data-route": route.name },
      el("figcaption", {}, route.name),
      chart("Delivered per minute", [{ values: hour.delivered, className: "delivered" }], (value) => String(value)),
      chart("Freshness p99 (live events)", [{ values: hour.p99, className: "freshness" }], seconds),
      // One line per lane (GET /admin/overview: lastHour.waiting by lane).
      chart("Waiting", Object.entries(hour.waiting).map(([lane, values]) => ({ values, className: `waiting lane-${lane}` })), (value) => String(value)),
    );
  });
  document.getElementById("charts").replaceChildren(...cards);
}

async function refresh() {
  try {
    const overview = await call("GET", "overview");
    renderHealth(overview);
    renderService(overview);
    renderStreams(overview);
    renderRoutes(overview);
    renderCharts(overview);
    renderRecovery(overview);
    await refreshReplays(overview.archive);
    const problem = document.getElementById("problem");
    problem.hidden = overview.unavailable.length === 0;
    problem.textContent = overview.unavailable.length ? `Not readable right now (Redis unreachable?): ${overview.unavailable.join(", ")}. Shown as unknown.` : "";
    replaceChildren("refreshed", `Updated ${new Date(overview.generatedAt).toLocaleTimeString()}, every ${refreshSeconds} s.`);
  } catch (error) {
    const problem = document.getElementById("problem");
    problem.hidden = false;
    problem.textContent = `The service did not answer: ${error.message}. Retrying every ${refreshSeconds} s.`;
  } finally {
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes) + 1);
    setTimeout(refresh, refreshSeconds * 1000);
  }
}

// ---------- every replay (GET /admin/replays) ----------

async function refreshReplays(archive) {
  let replays;
  if (archive?.state === "off") return document.querySelector("#replays tbody").replaceChildren(el("tr", {}, el("td", { colspan: 9, class: "muted" }, `No replays: the archive is off (${archive.detail}).`)));
  try {
    ({ replays } = await call("GET", "replays"));
  } catch (error) {
    const why = error instanceof Unavailable ? "Replays need the archive (ARCHIVE=on, and its Postgres answering)." : `Replays could not be read: ${error.message}`;
    return document.querySelector("#replays tbody").replaceChildren(el("tr", {}, el("td", { colspan: 9, class: "muted" }, why)));
  }
  const rows = replays.map((replay) => {
    const cancel = replay.state === "running" ? el("button", { type: "button", onclick: () => cancelReplay(replay.replayId) }, `Cancel replay ${replay.replayId}`) : "";
    return el(
      "tr",
      { "data-replay": replay.replayId },
      el("th", { scope: "row" }, replay.replayId),
      cell(replay.route),
      cell(replay.waitingForArchiveSince ? "running, waiting for the archive" : replay.state, replay.state === "done" ? "ok replay-state" : replay.state === "failed" ? "bad replay-state" : "replay-state"),
      cell(replay.matched, "number"),
      cell(replay.sent, "number"),
      cell(replay.delivered, "number"),
      cell(replay.failed, "number"),
      cell(when(replay.startedAt)),
      el("td", {}, cancel),
    );
  });
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 9, class: "muted" }, "No replay yet.")));
  document.querySelector("#replays tbody").replaceChildren(...rows);
}

async function cancelReplay(replayId) {
  try {
    await call("DELETE", `replays/${encodeURIComponent(replayId)}`);
  } catch (error) {
    replaceChildren("replay-message", explain(error, "Cancelling a replay"));
  }
  await refreshReplays();
}

async function startReplay(request, messageId) {
  const answer = await call("POST", "replays", request);
  replaceChildren(messageId, `Replay ${answer.replayId} started: ${answer.matched} events to ${request.route}. Its progress is under Recovery and replays.`);
  await refreshReplays();
}

// ---------- replay a window ----------

let counted;

function replayRequest(form) {
  const data = new window.FormData(form);
  const request = { route: data.get("route"), since: data.get("since").trim() };
  for (const name of ["until", "type", "entity", "stream"]) if (data.get(name).trim()) request[name] = data.get(name).trim();
  if (data.get("rate").trim()) request.rate = Number(data.get("rate"));
  return request;
}

function setUpReplayForm() {
  const form = document.getElementById("replay");
  const start = document.getElementById("replay-start");
  form.addEventListener("input", () => {
    counted = undefined;
    start.disabled = true;
    start.textContent = "Start replay";
  });
  form.addEventListener("submit", async (submitted) => {
    submitted.preventDefault();
    const request = replayRequest(form);
    try {
      const answer = await call("POST", "replays", { ...request, dryRun: true });
      counted = request;
      start.disabled = false;
      start.textContent = `Start replay of ${answer.matched} events to ${request.route}`;
      replaceChildren("replay-message", `Dry run: ${answer.matched} events match; nothing was sent.`);
    } catch (error) {
      replaceChildren("replay-message", explain(error, "Replay"));
    }
  });
  start.addEventListener("click", async () => {
    if (!counted) return;
    try {
      await startReplay(counted, "replay-message");
      start.disabled = true;
      counted = undefined;
    } catch (error) {
      replaceChildren("replay-message", explain(error, "Replay"));
    }
  });
}

// ---------- search and timeline ----------

function setUpSearch() {
  const form = document.getElementById("search");
  form.addEventListener("submit", async (submitted) => {
    submitted.preventDefault();
    const query = new URLSearchParams();
    for (const [name, value] of new window.FormData(form)) if (String(value).trim()) query.set(name, String(value).trim());
    query.set("limit", "50");
    try {
      const answer = await call("GET", `events?${query}`);
      renderResults(answer.events ?? []);
    } catch (error) {
      replaceChildren("search-results", explain(error, "Search"));
    }
  });
}

function entityOf(event) {
  return event.entity ?? event.entityId ?? event.data?.object?.user_id ?? event.data?.object?.id ?? null;
}

function renderResults(events) {
  if (events.length === 0) return replaceChildren("search-results", el("p", {}, "No event matches."));
  const rows = events.map((event) => {
    const id = event.id ?? event.eventId;
    const outcomes = event.outcomes ?? event.routes ?? {};
    const outcomeText = Array.isArray(outcomes)
      ? outcomes.map((entry) => `${entry.route}: ${entry.outcome ?? entry.state}`).join(", ")
      : Object.entries(outcomes).map(([route, outcome]) => `${route}: ${outcome}`).join(", ");
    return el(
      "tr",
      {},
      el("th", { scope: "row" }, el("button", { type: "button", onclick: () => openTimeline(id) }, id)),
      cell(when(event.time)),
      cell(event.type),
      cell(entityOf(event) ?? "none"),
      cell(event.origin),
      cell(outcomeText || "none"),
    );
  });
  const head = el("tr", {}, ...["Event (open its timeline)", "Time", "Type", "Entity", "Origin", "Outcome per route"].map((name) => el("th", { scope: "col" }, name)));
  replaceChildren("search-results", el("table", {}, el("caption", {}, `${events.length} events`), el("thead", {}, head), el("tbody", {}, rows)));
}

async function openTimeline(eventId) {
  try {
    const event = await call("GET", `events/${encodeURIComponent(eventId)}`);
    renderTimeline(eventId, event);
    document.querySelector("#timeline h3")?.focus();
  } catch (error) {
    replaceChildren("timeline", explain(error, "The event's timeline"));
  }
}

function renderTimeline(eventId, event) {
  const timeline = event.timeline ?? {};
  const arrival = timeline.arrival ?? event.arrival ?? {};
  const failedFirst = arrival.tenantFailedFirst ?? arrival.failedFirst ?? arrival.tenantFailed;
  const items = [
    el("li", {}, `Arrived ${when(arrival.at ?? arrival.when ?? arrival.receivedAt)} by ${arrival.origin ?? "unknown"}${failedFirst ? ", after the tenant had failed to deliver it" : ""}.`),
  ];
  const perRoute = timeline.routes ?? event.routes ?? [];
  for (const route of Array.isArray(perRoute) ? perRoute : Object.entries(perRoute).map(([name, value]) => ({ route: name, ...value }))) {
    const attempts = (route.attempts instanceof Array ? route.attempts : []).map((attempt) =>
      el("li", {}, `${when(attempt.at ?? attempt.time)}: ${attempt.status ?? attempt.error ?? "sent"}${attempt.outcome ? `, ${attempt.outcome}` : ""}${attempt.replayId ? ` (replay ${attempt.replayId})` : ""}`),
    );
    items.push(el("li", { "data-timeline-route": route.route ?? route.name }, `Route ${route.route ?? route.name}: ${route.outcome ?? route.state ?? "unknown"}`, attempts.length ? el("ol", {}, attempts) : ""));
  }
  const routeSelect = el("select", { name: "route" }, routes.map((route) => el("option", { value: route.name }, route.name)));
  const message = el("p", { id: "timeline-message", "aria-live": "polite" });
  // The archive filters replays by arrival time (timeline.arrival.at), not the event's own time.
  const time = arrival.at ?? event.time;
  const entity = entityOf(event) ?? arrival.entity ?? null;
  const replayOne = async () => {
    const at = Date.parse(time);
    if (Number.isNaN(at)) return void message.replaceChildren("This event has no time: replay it with a window instead.");
    const request = { route: routeSelect.value, since: new Date(at).toISOString(), until: new Date(at + 1).toISOString(), type: event.type };
    if (entity) request.entity = entity;
    await startReplay(request, "timeline-message").catch((error) => message.replaceChildren(explain(error, "Replay")));
  };
  const replayEntity = async () => {
    const since = new Date(Date.now() - 30 * 86_400_000).toISOString();
    await startReplay({ route: routeSelect.value, since, entity }, "timeline-message").catch((error) => message.replaceChildren(explain(error, "Replay")));
  };
  replaceChildren(
    "timeline",
    el(
      "div",
      { class: "timeline" },
      el("h3", { tabindex: "-1" }, `Timeline of ${eventId} (${event.type ?? "type unknown"})`),
      el("ol", {}, items),
      el("label", {}, "Replay to route ", routeSelect),
      el("button", { type: "button", onclick: replayOne }, "Replay this event"),
      " ",
      entity ? el("button", { type: "button", onclick: replayEntity }, `Replay every event of ${entity} (30 days)`) : "",
      message,
    ),
  );
}

// ---------- dead letters ----------

function setUpDeadLetters() {
  document.getElementById("list-dead-letters").addEventListener("click", listDeadLetters);
}

async function listDeadLetters() {
  try {
    const { deadLetters } = await call("GET", "dead-letters");
    renderDeadLetters(deadLetters ?? []);
  } catch (error) {
    replaceChildren("dead-letters", explain(error, "The dead-letter list"));
  }
}

function renderDeadLetters(deadLetters) {
  if (deadLetters.length === 0) return replaceChildren("dead-letters", el("p", {}, "No dead letters."));
  const rows = deadLetters.map((letter) =>
    el(
      "tr",
      {},
      el("td", {}, el("input", { type: "checkbox", value: `${letter.route}/${letter.jobId}`, "aria-label": `Select ${letter.eventId} of route ${letter.route}` })),
      el("th", { scope: "row" }, letter.eventId),
      cell(letter.route),
      cell(letter.type),
      cell(letter.failedReason),
      cell(when(letter.failedAt)),
      cell(letter.attempts, "number"),
    ),
  );
  const head = el("tr", {}, ...["Select", "Event", "Route", "Type", "Why it failed", "Failed at", "Attempts"].map((name) => el("th", { scope: "col" }, name)));
  const table = el("table", {}, el("caption", {}, `${deadLetters.length} dead letters`), el("thead", {}, head), el("tbody", {}, rows));
  const message = el("p", { "aria-live": "polite" });
  const retry = async () => {
    const jobIds = [...table.querySelectorAll("input[type=checkbox]:checked")].map((box) => box.value);
    if (jobIds.length === 0) return void message.replaceChildren("Select the dead letters to retry first.");
    try {
      const { replayed } = await call("POST", "dead-letters/replay", { jobIds });
      message.replaceChildren(`${replayed} dead letters queued again, with fresh attempts.`);
    } catch (error) {
      message.replaceChildren(explain(error, "Retrying dead letters"));
    }
  };
  replaceChildren("dead-letters", table, el("button", { type: "button", onclick: retry }, "Retry selected"), message);
}

setUpReplayForm();
setUpSearch();
setUpDeadLetters();
refresh();
