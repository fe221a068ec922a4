#!/usr/bin/env python3
"""A service committing one ledger-v1 write every 10 ms with a 5 s busy
timeout, for SECONDS, while something else (`settle adopt`, the console)
works on the same ledger. Prints how many writes it made, how many failed
(e.g. "database is locked") and how long the slowest one waited, so what
adoption costs a running service is a number.

    python3 scripts/service-during.py LEDGER SECONDS [TAG]
"""
import sqlite3, sys, time
path, seconds = sys.argv[1], float(sys.argv[2])
tag = sys.argv[3] if len(sys.argv) > 3 else "during"
c = sqlite3.connect(path, isolation_level=None, timeout=5)
c.execute("PRAGMA journal_mode=WAL"); c.execute("PRAGMA synchronous=NORMAL")
now = "2026-12-01T12:00:00Z"
waits, failures, i = [], [], 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    t = time.monotonic()
    try:
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO operations (account, op_type, idem_key, fingerprint, params, state, max_attempts, created_at, updated_at, version) VALUES (?,?,?,?,?,'unknown',3,?,?,1)", ("svc", "place_order", f"{tag}-{i}", "sha256:00", '{"n":1}', now, now))
        c.execute("INSERT INTO events (op_id, attempt, at, event) VALUES (last_insert_rowid(),1,?,'started')", (now,))
        c.execute("COMMIT")
    except sqlite3.Error as e:
        failures.append(str(e))
        try:
            c.execute("ROLLBACK")
        except sqlite3.Error:
            pass
    waits.append(time.monotonic() - t)
    i += 1
    time.sleep(max(0.0, 0.010 - (time.monotonic() - t)))
waits.sort()
p99 = waits[int(len(waits) * 0.99) - 1] if waits else 0
print(f"writes {len(waits)} failed {len(failures)} max_wait_ms {waits[-1]*1000:.1f} "
      f"p99_ms {p99*1000:.1f} over_100ms {sum(w > 0.1 for w in waits)}")
for f in sorted(set(failures)):
    print(f"  failure: {f}")
