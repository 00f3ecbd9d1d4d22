/**
 * The modules where a wrong line loses or repeats an event, each with the test files that
 * state its behaviour (docs/testing.md "Mutation testing"). `npm run mutate` runs one
 * StrykerJS pass per group, with only that group's tests: the whole suite per mutant would
 * take hours on two shared cores.
 *
 * Add a group here for a new module (the archive writer, replay and the pull offset have
 * their place at the end): its source files under `mutate`, the tests that prove it under
 * `tests`.
 */
export const mutationGroups = [
  {
    name: "stale-guard",
    mutate: ["src/dispatch/stale-guard.ts"],
    tests: [
      "test/integration/dispatch-drop-stale-reconcile.test.ts",
      "test/integration/dispatch-drop-stale-states.test.ts",
      // Not dispatch-drop-stale.test.ts: its workers are processes of their own (dist/),
      // where a mutant of this module is never loaded.
      "test/integration/dispatch-drop-stale-lease.test.ts",
    ],
  },
  {
    name: "retry-policy",
    mutate: ["src/dispatch/retry-policy.ts"],
    tests: ["test/unit/dispatch/retry-policy.test.ts"],
  },
  {
    name: "credential-checks",
    mutate: ["src/http/check-credentials.ts"],
    tests: ["test/unit/http/check-credentials.test.ts"],
  },
  {
    name: "reconcile-decision",
    mutate: ["src/reconcile/decide-from-record.ts", "src/reconcile/create-reconciler.ts"],
    tests: ["test/unit/reconcile/decide-from-record.test.ts", "test/unit/reconcile/create-reconciler.test.ts"],
  },
  {
    name: "reconcile-queue",
    mutate: ["src/reconcile/create-reconcile-queue.ts"],
    tests: ["test/integration/reconcile-queue.test.ts", "test/integration/reconcile-tenant-outage.test.ts", "test/integration/reconcile-admin.test.ts"],
  },
  {
    name: "admission",
    mutate: ["src/queue/event-store.ts", "src/queue/admission.ts", "src/queue/capture-job-add.ts"],
    tests: [
      "test/integration/admission.test.ts",
      "test/integration/admission-faults.test.ts",
      "test/integration/event-store.test.ts",
      // Each captured add's span (tracing on): how the admission ends BullMQ's add of a job it built.
      "test/integration/admission-traced.test.ts",
    ],
  },
  {
    name: "ledger",
    mutate: ["src/queue/event-ledger.ts", "src/queue/ledger-windows.ts", "src/queue/ledger-transport.ts"],
    // event-ledger-admit: the ledger's admission (its one-step store) in this process;
    // the admission group's tests take it too, but against the admission's own modules.
    // dispatch-mark-at-completion: the ledger's `finish` (a job's completion with its mark), through a dispatcher.
    tests: ["test/integration/event-ledger.test.ts", "test/integration/event-ledger-batch.test.ts", "test/integration/event-ledger-compact.test.ts", "test/integration/event-ledger-admit.test.ts", "test/integration/dispatch-mark-at-completion.test.ts"],
  },
  {
    name: "mark-at-completion",
    mutate: ["src/dispatch/mark-at-completion.ts"],
    tests: [
      "test/integration/dispatch-mark-at-completion.test.ts",
      // A ledger whose connection is gone: the delivery stands, said, the job completed all the same.
      "test/integration/dispatch-archive-attempts.test.ts",
      "test/integration/dispatch-once.test.ts",
      "test/integration/dispatch-delivery.test.ts",
      // A stale skip completes as BullMQ's own, no delivery recorded.
      "test/integration/dispatch-drop-stale-states.test.ts",
    ],
  },
  {
    name: "call-batcher",
    // The batcher alone, with its unit tests: fake timers answer at once, where the ledger's
    // tests would wait out every mutant that never sends (a timeout each).
    mutate: ["src/queue/call-batcher.ts"],
    tests: ["test/unit/queue/call-batcher.test.ts"],
  },
  {
    name: "fan-out-priority",
    mutate: ["src/queue/fan-out.ts", "src/queue/job-id.ts"],
    tests: [
      "test/unit/queue/job-id.test.ts",
      "test/integration/event-store.test.ts",
      "test/integration/dispatch-once.test.ts",
      // An event too deep for BullMQ's JSON.stringify, stored as its text.
      "test/integration/poison-ingress.test.ts",
      // A first run reads no delivered mark unless its store said to recheck.
      "test/integration/dispatch-drop-stale-states.test.ts",
    ],
  },
  {
    name: "delivery-processor",
    mutate: ["src/dispatch/create-delivery-processor.ts"],
    tests: [
      "test/integration/dispatch-delivery.test.ts",
      "test/integration/dispatch-once.test.ts",
      "test/integration/dispatch-retry-window.test.ts",
      "test/integration/dispatch-crash.test.ts",
      "test/integration/dispatch-says.test.ts",
      // The archive's attempt records, the circuit, the stale outcome: paths the tests above do not take.
      "test/integration/dispatch-archive-attempts.test.ts",
      "test/integration/dispatch-circuit.test.ts",
      "test/integration/dispatch-drop-stale-states.test.ts",
    ],
  },
  {
    name: "sweep-window",
    mutate: ["src/sweep/sweep-window.ts"],
    // Tests that run the service in this process: sweep-recovers and sweep-late-failure run
    // it as its own process, where a mutant of this one is never loaded. Not
    // sweep-redis-outage: its sweeps find no stream, so no window is read.
    tests: ["test/integration/sweep-window.test.ts", "test/integration/reconcile-window-cli.test.ts", "test/integration/sweep-poison.test.ts"],
  },
  {
    name: "archive-writer",
    mutate: ["src/archive/write-archive-batch.ts", "src/archive/create-archive-writer.ts"],
    // Not archive-postgres-outage: it stops Postgres for a while in each mutant's run (8 h
    // estimated for the group with it). The writer's outage handling is stated in process here.
    tests: ["test/integration/archive-writer.test.ts", "test/integration/archive-writer-records.test.ts", "test/integration/archive-writer-outbox.test.ts"],
  },
  {
    name: "replay",
    mutate: ["src/archive/replay-runner.ts"],
    // Not archive-replay.test.ts: it runs the replay in service processes of their own
    // (dist/), where a mutant of this module is never loaded.
    tests: ["test/integration/archive-replay-runner.test.ts"],
  },
  {
    name: "pull-offset",
    mutate: ["src/pull/pull-state.ts"],
    // pull-state states the module itself against a real Redis in a second. pull-faults and
    // pull-delivers (the whole service pulling from the emulator) took a minute and more per
    // mutant: 45 min estimated for 58 mutants on the shared machine (docs/testing.md).
    tests: ["test/integration/pull/pull-state.test.ts"],
  },
  {
    // What an operator is told a delivery did (Nothing silent): a wrong line here miscounts
    // every delivery on /metrics, and the alerts read these series.
    name: "per-event-metrics",
    mutate: ["src/metrics/create-fast-counter.ts", "src/metrics/create-fast-histogram.ts", "src/metrics/create-label-sets.ts"],
    tests: ["test/unit/metrics/create-fast-counter.test.ts", "test/unit/metrics/create-fast-histogram.test.ts"],
  },
  {
    // A route's filter and transform (docs/routes.md): a wrong line sends an event where it
    // should not, sends the wrong body, or leaves one out without a word.
    name: "filters-transforms",
    mutate: ["src/routes/route-filter.ts", "src/routes/route-transform.ts", "src/dispatch/shape-body.ts", "src/queue/record-filtered.ts"],
    // Not route-shape-start or route-recipes: they run the service or the CLI as processes
    // of their own (dist/), where a mutant of these modules is never loaded.
    tests: [
      "test/unit/routes/route-filter.test.ts",
      "test/unit/routes/route-transform.test.ts",
      "test/unit/routes/route-chooser.test.ts",
      "test/unit/routes/load-routes-messages.test.ts",
      "test/integration/record-filtered.test.ts",
      "test/integration/route-shape.test.ts",
      "test/integration/route-shape-replay.test.ts",
    ],
  },
  {
    // The live and late lanes, and `routes park`: a wrong line puts a flood ahead of live
    // events, or parks an event nowhere.
    name: "lanes-park",
    mutate: ["src/queue/lane.ts", "src/queue/park-waiting.ts"],
    // park-waiting: the park on a real queue in this process. Not park-and-replay (a flood
    // through the whole service, half a minute per mutant) nor flood-live-first: lane.ts's
    // rules are stated in its unit test.
    tests: ["test/unit/queue/lane.test.ts", "test/integration/park-waiting.test.ts"],
  },
  {
    // Erasure (README.md, Erasure): a wrong line keeps a payload an erasure request removed.
    name: "erasure",
    mutate: ["src/archive/forget-entity.ts", "src/admin/forget-entity-jobs.ts"],
    // forget-entity and forget-entity-jobs state each rule against Postgres and BullMQ in
    // this process; archive-writer-records, an erasure's time against a clock ahead. Not
    // archive-search and archive-replay-runner: an erasure is a step of theirs, not what they
    // state (16.7 % with them alone, 11 min).
    tests: ["test/integration/forget-entity.test.ts", "test/integration/forget-entity-jobs.test.ts", "test/integration/archive-writer-records.test.ts"],
  },
  {
    // The embedded servers' supervisor: a wrong line leaves the archive's Postgres (or the
    // embedded redis-server) dead, or starts a second server on the same data.
    name: "postgres-supervisor",
    mutate: ["src/redis/keep-embedded-server.ts", "src/archive/keep-embedded-postgres.ts", "src/archive/postgres-binaries.ts"],
    // A real TCP server, a real Postgres killed, real library links, in this process. Not
    // embedded-postgres-binaries or chaos/embedded-postgres-kill: their services are
    // processes of their own (dist/); nor embedded-redis-restart (the whole service, a
    // redis-server killed): the supervisor's rules are stated by keep-embedded-server.
    tests: ["test/integration/keep-embedded-server.test.ts", "test/integration/keep-embedded-postgres.test.ts", "test/integration/postgres-binaries.test.ts"],
  },
  {
    // A route's first delivery in its event's row: a wrong line archives a delivery twice,
    // drops one, or keeps an event back for good.
    name: "archive-rows",
    mutate: ["src/archive/first-deliveries.ts", "src/archive/kept-back.ts", "src/archive/entry-tally.ts"],
    tests: ["test/unit/kept-back.test.ts", "test/unit/outbox-entry.test.ts", "test/integration/archive-writer-records.test.ts", "test/integration/archive-upgrade.test.ts"],
  },
];

/** The group named, or an error that lists the names there are. */
export function mutationGroup(name) {
  const group = mutationGroups.find((candidate) => candidate.name === name);
  if (!group) throw new Error(`no mutation group "${name}"; the groups are: ${mutationGroups.map((candidate) => candidate.name).join(", ")} (scripts/mutation-groups.mjs)`);
  return group;
}
