-- Smaller rows and cheaper keys (docs/benchmarks.md, "The archive"): about 600 bytes per
-- archived event with its delivery, from about 890.
--
-- An event's first delivery to a route, outside a replay, is kept in the event's own row
-- (write-archive-batch.ts) rather than as a row of attempts with its two index entries:
-- `route:ms after arrival:status`, comma separated. Every other attempt (a retry, a dead
-- letter, a replay's delivery, one that reached the writer apart from its event) is a row
-- of attempts as before; each route's outcome is its latest by time, from either.
ALTER TABLE events ADD COLUMN delivered text;

-- No primary key: an id is archived once by the writers' own check under their lock
-- (write-archive-batch.ts), and the key repeated the id, the largest column but the payload.
-- The arrival alone orders search and finds an event's row with its id.
ALTER TABLE events DROP CONSTRAINT events_pkey;
CREATE INDEX events_by_arrival ON events (arrived_at);

-- An id and an entity are found through a 4-byte hash of them, the text itself checked on
-- the row (archive-queries.ts `idIs`, `entityIs`): each is an equality, never a range or a
-- prefix. Half the bytes of a B-tree over the text; a hash index was larger still.
DROP INDEX events_by_id;
CREATE INDEX events_by_id ON events (hashtext(id));
DROP INDEX events_by_entity;
CREATE INDEX events_by_entity ON events (hashtext(entity), arrived_at) WHERE entity IS NOT NULL;

-- Every attempt, wherever it is kept: the rows of attempts, and the first deliveries of the
-- events' rows (with no key: their key was the attempt's, unique per event and route). For
-- a person reading the archive in SQL, and the tests.
CREATE VIEW every_attempt AS
SELECT arrived_at, event_id, route, attempt_key, at, status, error, outcome, replay_id FROM attempts
UNION ALL
SELECT e.arrived_at, e.id, split_part(d, ':', 1), NULL, e.arrived_at + split_part(d, ':', 2)::bigint * interval '1 millisecond',
       nullif(split_part(d, ':', 3), '')::integer, NULL, 'delivered', NULL
FROM events e CROSS JOIN LATERAL unnest(string_to_array(e.delivered, ',')) AS d;
