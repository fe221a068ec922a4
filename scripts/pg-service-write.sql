-- A service's ledger-v1 write path on PostgreSQL, for pgbench: per
-- operation, reserve it; insert the attempt and its start event; insert
-- the commit event, finish the attempt and complete the operation; each
-- step its own transaction, as scripts/service-write.py does on SQLite.
-- One pgbench "transaction" is one whole operation (three commits).
-- Run it on a ledger before and after `settle adopt`; the ratio of the
-- two throughputs is what settle costs the service:
--   pgbench -n -M prepared -c 16 -j 2 -T 30 -f scripts/pg-service-write.sql LEDGER
-- Keys are random per operation, so runs never collide.
\set acct random(0, 999)
INSERT INTO operations (account, op_type, idem_key, fingerprint, params, state,
    max_attempts, created_at, updated_at, version)
VALUES ('svc-' || :acct, 'place_order', 'bench-' || :client_id || '-' || md5(random()::text),
    'sha256:00', '{"n":1}', 'reserved', 3, now(), now(), 1)
RETURNING id AS op \gset
BEGIN;
INSERT INTO attempts (op_id, attempt, started_at, outcome) VALUES (:op, 1, now(), 'pending');
INSERT INTO events (op_id, attempt, at, event) VALUES (:op, 1, now(), 'started');
COMMIT;
BEGIN;
INSERT INTO events (op_id, attempt, at, event, detail) VALUES (:op, 1, now(), 'committed', '{}');
UPDATE attempts SET ended_at = now(), outcome = 'ok' WHERE op_id = :op AND attempt = 1;
UPDATE operations SET state = 'completed', result_id = 'r-' || :op, updated_at = now(),
    version = version + 1 WHERE id = :op;
COMMIT;
