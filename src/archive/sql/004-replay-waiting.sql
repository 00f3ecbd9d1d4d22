-- A running replay that waits for the archive to catch up with its window (events still
-- in the outbox, replay-runner.ts): since when, shown by GET /admin/replays/:id. NULL
-- while it reads, and once it ends.
ALTER TABLE replays ADD COLUMN waiting_since timestamptz;
