#!/usr/bin/env python3
"""The write path of a service that keeps a ledger-v1 SQLite ledger the usual
way, timed: per operation, reserve it; insert the attempt and its start event;
insert the commit event, finish the attempt and complete the operation; each
step its own transaction (WAL). Prints the seconds N operations took, so the
same run on a ledger before and after `settle adopt` gives what settle costs
the service, as a ratio.

    python3 scripts/service-write.py LEDGER N NORMAL|FULL TAG
"""
import sqlite3, sys, time
path, n, sync, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
c = sqlite3.connect(path, isolation_level=None, timeout=5)
c.execute("PRAGMA journal_mode=WAL"); c.execute(f"PRAGMA synchronous={sync}")
now = "2026-12-01T12:00:00Z"
t = time.perf_counter()
for i in range(n):
    c.execute("BEGIN")
    cur = c.execute("INSERT INTO operations (account, op_type, idem_key, fingerprint, params, state, max_attempts, created_at, updated_at, version) VALUES (?,?,?,?,?,'reserved',3,?,?,1)", ("svc", "place_order", f"{tag}-{i}", "sha256:00", '{"n":1}', now, now))
    op = cur.lastrowid
    c.execute("COMMIT")
    c.execute("BEGIN")
    c.execute("INSERT INTO attempts (op_id, attempt, started_at, outcome) VALUES (?,1,?,'pending')", (op, now))
    c.execute("INSERT INTO events (op_id, attempt, at, event) VALUES (?,1,?,'started')", (op, now))
    c.execute("COMMIT")
    c.execute("BEGIN")
    c.execute("INSERT INTO events (op_id, attempt, at, event, detail) VALUES (?,1,?,'committed','{}')", (op, now))
    c.execute("UPDATE attempts SET ended_at=?, outcome='ok' WHERE op_id=? AND attempt=1", (now, op))
    c.execute("UPDATE operations SET state='completed', result_id=?, updated_at=?, version=version+1 WHERE id=?", (f"r-{i}", now, op))
    c.execute("COMMIT")
print(f"{time.perf_counter()-t:.3f}")
