-- The archive: every stored event, and every delivery attempt and outcome per route
-- (docs/architecture.md, "The archive"). Both tables are partitioned by the event's
-- arrival, one partition per UTC day, so retention drops whole days
-- (archive-partitions.ts) and an event's attempts go with it.

CREATE TABLE events (
  arrived_at  timestamptz NOT NULL,           -- when this service stored it
  id          text        NOT NULL,           -- the tenant's event id (the webhook-id)
  type        text COLLATE "C" NOT NULL,  -- C: the type index serves `user.%` prefixes in any database locale
  origin      text        NOT NULL,           -- webhook, reconcile, pull
  stream      text,                           -- the tenant's event stream id
  entity      text,                           -- user:<id>, organization:<id>, group:<id>, connection:<id>
  failed_first boolean    NOT NULL,           -- the tenant had failed to deliver it first (recovered by reconcile or the sweep)
  routes      text[]      NOT NULL,           -- the routes it was queued for; empty: unrouted
  payload     bytea,                          -- the event as sent, compressed (payload-codec.ts); NULL once erased
  erased_at   timestamptz,
  PRIMARY KEY (arrived_at, id)
) PARTITION BY RANGE (arrived_at);

-- Search: newest first, keyset on (arrived_at, id) (the primary key read backwards); one
-- index per filter that narrows.
CREATE INDEX events_by_id ON events (id);
CREATE INDEX events_by_entity ON events (entity, arrived_at DESC, id DESC) WHERE entity IS NOT NULL;
CREATE INDEX events_by_type ON events (type, arrived_at DESC, id DESC);

CREATE TABLE attempts (
  arrived_at  timestamptz NOT NULL,           -- the event's, so its partition is dropped with the event's
  event_id    text        NOT NULL,
  route       text        NOT NULL,
  attempt_key text        NOT NULL,           -- unique per attempt of a job, so a record written twice is kept once
  at          timestamptz NOT NULL,
  status      integer,                        -- the downstream's HTTP status, when it answered
  error       text,                           -- why it failed, when it did
  outcome     text        NOT NULL,           -- retry, delivered, dead_letter, stale
  replay_id   text,                           -- set on an attempt of a replay
  PRIMARY KEY (arrived_at, event_id, route, attempt_key)
) PARTITION BY RANGE (arrived_at);

-- Search by route and outcome: "which events were dead letters of crm".
CREATE INDEX attempts_by_outcome ON attempts (route, outcome, arrived_at DESC);

-- Erasure requests (forget-entity.ts): an event of the entity that arrived before its
-- erasure and reaches the archive only after it (it waited in the outbox) is archived
-- without its payload.
CREATE TABLE erasures (
  entity      text        PRIMARY KEY,
  erased_at   timestamptz NOT NULL
);
