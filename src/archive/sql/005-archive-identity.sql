-- Which archive this database is: every archive writer of one Redis outbox must write to the
-- same one, and says so when it does not (outbox-database-claim.ts). One row, made once.
CREATE TABLE archive_identity (
  one        boolean     PRIMARY KEY DEFAULT true CHECK (one),
  id         text        NOT NULL DEFAULT gen_random_uuid()::text,
  created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO archive_identity DEFAULT VALUES;
