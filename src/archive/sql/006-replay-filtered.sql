-- Events a replay skipped as its route, as defined when the replay ran, leaves them out
-- (match, filter, testEvents: replay-runner.ts): counted apart from erased ones.
ALTER TABLE replays ADD COLUMN filtered integer NOT NULL DEFAULT 0;
