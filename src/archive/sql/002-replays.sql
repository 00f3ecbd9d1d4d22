-- Replays (replay.ts): what each asked for, how far it got (its checkpoint) and its counts.
-- One running replay per route (the partial unique index).
CREATE TABLE replays (
  id          text        PRIMARY KEY,
  route       text        NOT NULL,
  filter      jsonb       NOT NULL,           -- since, until, type, entity, stream, rate
  state       text        NOT NULL,           -- running, done, cancelled, failed
  matched     integer     NOT NULL,
  sent        integer     NOT NULL DEFAULT 0,
  skipped     integer     NOT NULL DEFAULT 0, -- erased payloads, never sent
  delivered   integer     NOT NULL DEFAULT 0,
  failed      integer     NOT NULL DEFAULT 0,
  checkpoint_at timestamptz,                  -- the last event queued: (arrived_at, id), oldest first
  checkpoint_id text,
  reason      text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX one_running_replay_per_route ON replays (route) WHERE state = 'running';

-- A replay's delivered and failed counts are read from its attempts.
CREATE INDEX attempts_by_replay ON attempts (replay_id) WHERE replay_id IS NOT NULL;
