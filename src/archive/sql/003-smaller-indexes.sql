-- Smaller indexes (docs/benchmarks.md, "The archive"). Arrivals only grow, and a B-tree
-- split at the left of a page (where a DESC index puts each newer arrival) leaves both
-- halves half empty, while one at the right leaves the left page full: the search indexes
-- are ascending and read backwards for newest first, which Postgres does as cheaply.
-- They end at the arrival: the id that breaks a tie of arrivals (the keyset's second half)
-- is read from the row, and the keyset queries bound the arrival alone too.
DROP INDEX events_by_entity;
CREATE INDEX events_by_entity ON events (entity, arrived_at) WHERE entity IS NOT NULL;
DROP INDEX events_by_type;
CREATE INDEX events_by_type ON events (type, arrived_at);
DROP INDEX attempts_by_outcome;
CREATE INDEX attempts_by_outcome ON attempts (route, outcome, arrived_at);
