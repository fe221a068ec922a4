-- Sample ledger, written the way a service writes one: plain SQL against the
-- ledger-v1 tables, no console tables, schema version 0. `settle demo` runs
-- this script into a fresh file and then opens it, so the console adopts it
-- exactly as it would adopt a real service's ledger.
--
-- Times are relative to when the script runs, so stale and live leases,
-- expired keys and passed deadlines stay what they claim to be.
-- Every state and every decision rule of the contract appears at least once;
-- the comment on each operation says what it shows.

CREATE TABLE operations (
    id INTEGER PRIMARY KEY, account TEXT NOT NULL, op_type TEXT NOT NULL,
    idem_key TEXT NOT NULL, fingerprint TEXT NOT NULL, params TEXT,
    state TEXT NOT NULL, result_id TEXT, max_attempts INTEGER NOT NULL,
    deadline_at TEXT, lease_expires_at TEXT, key_expires_at TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    UNIQUE (account, op_type, idem_key)
);
CREATE TABLE attempts (
    op_id INTEGER NOT NULL REFERENCES operations(id), attempt INTEGER NOT NULL,
    started_at TEXT NOT NULL, ended_at TEXT, outcome TEXT NOT NULL,
    error TEXT, response TEXT, PRIMARY KEY (op_id, attempt)
);
CREATE TABLE events (
    id INTEGER PRIMARY KEY, op_id INTEGER NOT NULL, attempt INTEGER,
    at TEXT NOT NULL, event TEXT NOT NULL, detail TEXT
);
CREATE TABLE op_types (
    op_type TEXT PRIMARY KEY, idempotent INTEGER NOT NULL,
    key_retention_s INTEGER, description TEXT
);

INSERT INTO op_types VALUES
  ('create_report',  1, 604800, 'Reporting API: keys honoured for 7 days, replays the first result'),
  ('place_order',    1, 86400,  'Order gateway: keys honoured for 24 hours'),
  ('refund_payment', 1, NULL,   'Payments: keys kept forever'),
  ('send_invoice',   0, NULL,   'Legacy mailer: ignores idempotency keys; a retry sends a second invoice');
-- provision_account has no row on purpose: its receiver's contract is unknown.

-- A helper view of "now" in ledger time format, so each row reads clearly.
CREATE TEMP VIEW t AS SELECT
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now') AS now,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-3 days') AS d3,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-26 hours') AS h26,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-6 hours') AS h6,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-2 hours') AS h2,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-1 hours') AS h1,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-40 minutes') AS m40,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-20 minutes') AS m20,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-5 minutes') AS m5,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '+10 minutes') AS p10m,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '+4 hours') AS p4h,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '+5 days') AS p5d;

-- 1. unknown: attempt 1 committed report-8812, then the reply timed out.
--    Evidence says applied; `not applied` is refused without an override.
INSERT INTO operations SELECT 1, 'acme-corp', 'create_report', 'rpt-2026-W48-acme',
  'sha256:5b1f0e3c9a7d24f6e8b0c1d2a3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2',
  '{"format":"pdf","report":"weekly-sales","week":"2026-W48"}', 'unknown', NULL, 3,
  p4h, NULL, p5d, h1, m40, 2 FROM t;
INSERT INTO attempts SELECT 1, 1, h1, m40, 'timeout', 'no reply within 30s (read timeout)', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 1, NULL, h1, 'reserved', '{"worker":"reports-7f9c"}' FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 1, 1, h1, 'committed', '{"effect_id":"report-8812"}' FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 1, 1, m40, 'timeout', '{"after_ms":30000}' FROM t;

-- 2. unknown: a timeout before any commit; idempotent receiver, key kept:
--    retry with the same key is safe.
INSERT INTO operations SELECT 2, 'globex', 'place_order', 'ord-7731-a',
  'sha256:0a9b8c7d6e5f40312a3b4c5d6e7f80910a1b2c3d4e5f60718293a4b5c6d7e8f9',
  '{"amount_cents":129900,"currency":"EUR","sku":"GX-ROUTER-12"}', 'unknown', NULL, 3,
  p4h, NULL, NULL, m40, m20, 2 FROM t;
INSERT INTO attempts SELECT 2, 1, m40, m20, 'timeout', 'gateway timeout (504) from order-gw', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 2, NULL, m40, 'reserved', '{"worker":"orders-2"}' FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 2, 1, m20, 'timeout', '{"status":504}' FROM t;

-- 3. unknown: the order gateway keeps keys 24h and this one is 26h old:
--    a same-key retry could create a second order, so it is refused.
INSERT INTO operations SELECT 3, 'initech', 'place_order', 'ord-7702-c',
  'sha256:1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d',
  '{"amount_cents":4500,"currency":"USD","sku":"TPS-COVER"}', 'unknown', NULL, 3,
  NULL, NULL, NULL, h26, h26, 2 FROM t;
INSERT INTO attempts SELECT 3, 1, h26, h26, 'timeout', 'connection reset by peer', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 3, NULL, h26, 'reserved', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 3, 1, h26, 'timeout', NULL FROM t;

-- 4. unknown: send_invoice is not idempotent; only applied / not applied.
INSERT INTO operations SELECT 4, 'umbrella', 'send_invoice', 'inv-2026-11-0931',
  'sha256:2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e',
  '{"invoice":"INV-0931","to":"ap@umbrella.example"}', 'unknown', NULL, 2,
  NULL, NULL, NULL, h2, h2, 2 FROM t;
INSERT INTO attempts SELECT 4, 1, h2, h2, 'error', 'SMTP 451 4.7.1 try again later', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 4, NULL, h2, 'reserved', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 4, 1, h2, 'provider_error', '{"smtp":"451 4.7.1"}' FROM t;

-- 5. exhausted: three timeouts, budget spent, nothing committed seen.
--    A retry spends one attempt beyond the budget, and says so.
INSERT INTO operations SELECT 5, 'wayne-ent', 'create_report', 'rpt-2026-11-ledger-close',
  'sha256:3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f',
  '{"format":"csv","report":"ledger-close","month":"2026-11"}', 'exhausted', NULL, 3,
  p4h, NULL, p5d, h6, h2, 5 FROM t;
INSERT INTO attempts SELECT 5, 1, h6, h6, 'timeout', 'no reply within 30s', NULL FROM t;
INSERT INTO attempts SELECT 5, 2, h6, h6, 'error', 'HTTP 503 service unavailable', NULL FROM t;
INSERT INTO attempts SELECT 5, 3, h2, h2, 'timeout', 'no reply within 30s', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 5, NULL, h6, 'reserved', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 5, 1, h6, 'timeout', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 5, 2, h6, 'provider_error', '{"status":503}' FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 5, 3, h2, 'timeout', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 5, NULL, h2, 'budget_exhausted', '{"max_attempts":3}' FROM t;

-- 6. exhausted, deadline passed an hour ago: no retry; decide on evidence.
INSERT INTO operations SELECT 6, 'stark-ind', 'place_order', 'ord-7745-s',
  'sha256:4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a',
  '{"amount_cents":990000,"currency":"USD","sku":"ARC-REACTOR-MK2"}', 'exhausted', NULL, 2,
  h1, NULL, NULL, h2, h1, 4 FROM t;
INSERT INTO attempts SELECT 6, 1, h2, h2, 'timeout', 'no reply within 10s', NULL FROM t;
INSERT INTO attempts SELECT 6, 2, h2, h1, 'timeout', 'no reply within 10s', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 6, 1, h2, 'timeout', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 6, 2, h1, 'timeout', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 6, NULL, h1, 'budget_exhausted', '{"reason":"deadline"}' FROM t;

-- 7. conflict: the key came back with a different amount. Never a
--    same-key retry: the caller must send a corrected request.
INSERT INTO operations SELECT 7, 'acme-corp', 'place_order', 'ord-7760-a',
  'sha256:5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b',
  '{"amount_cents":25000,"currency":"EUR","sku":"ACME-ANVIL"}', 'conflict', NULL, 3,
  NULL, NULL, NULL, m40, m20, 2 FROM t;
INSERT INTO attempts SELECT 7, 1, m20, m20, 'conflict', 'key reused with different parameters (amount_cents 25000 != 52000)', '{"error":"idempotency_key_mismatch"}' FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 7, 1, m20, 'rejected_mismatch', '{"stored_fingerprint":"sha256:9e8d...","sent_fingerprint":"sha256:5a6b..."}' FROM t;

-- 8. reserved, lease passed 20 minutes ago: a stale reservation, in the queue.
INSERT INTO operations SELECT 8, 'globex', 'refund_payment', 'rfd-11902',
  'sha256:6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c',
  '{"amount_cents":4999,"payment":"pay_88121"}', 'reserved', NULL, 3,
  NULL, m20, NULL, m40, m40, 1 FROM t;
INSERT INTO attempts SELECT 8, 1, m40, NULL, 'in_flight', NULL, NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 8, NULL, m40, 'reserved', '{"worker":"payments-3","lease_s":1200}' FROM t;

-- 9. reserved, lease live for 10 more minutes: belongs to its owner; not in
--    the queue, and every decision is refused.
INSERT INTO operations SELECT 9, 'initech', 'create_report', 'rpt-2026-W48-initech',
  'sha256:7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d',
  '{"format":"pdf","report":"weekly-sales","week":"2026-W48"}', 'reserved', NULL, 3,
  p4h, p10m, p5d, m5, m5, 1 FROM t;
INSERT INTO attempts SELECT 9, 1, m5, NULL, 'in_flight', NULL, NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 9, NULL, m5, 'reserved', '{"worker":"reports-1a2b"}' FROM t;

-- 10. completed: applied and acknowledged.
INSERT INTO operations SELECT 10, 'acme-corp', 'create_report', 'rpt-2026-W47-acme',
  'sha256:8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e',
  '{"format":"pdf","report":"weekly-sales","week":"2026-W47"}', 'completed', 'report-8790', 3,
  NULL, NULL, p5d, d3, d3, 3 FROM t;
INSERT INTO attempts SELECT 10, 1, d3, d3, 'success', NULL, '{"report_id":"report-8790","replayed":false}' FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 10, NULL, d3, 'reserved', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 10, 1, d3, 'committed', '{"effect_id":"report-8790"}' FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 10, 1, d3, 'success', NULL FROM t;

-- 11. not_applied: the provider declined before any effect.
INSERT INTO operations SELECT 11, 'umbrella', 'place_order', 'ord-7711-u',
  'sha256:9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f',
  '{"amount_cents":1200,"currency":"GBP","sku":"UMB-T-VIRUS-KIT"}', 'not_applied', NULL, 3,
  NULL, NULL, NULL, h6, h6, 2 FROM t;
INSERT INTO attempts SELECT 11, 1, h6, h6, 'error', 'card declined (do_not_honor)', '{"error":"card_declined"}' FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 11, 1, h6, 'provider_error', '{"decline_code":"do_not_honor","effect":"none"}' FROM t;

-- 12. unknown, with an event word the contract does not know and an error
--     text carrying terminal escape sequences: shown as they are, defused.
INSERT INTO operations SELECT 12, 'wayne-ent', 'refund_payment', 'rfd-11950',
  'sha256:0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a',
  '{"amount_cents":15000,"payment":"pay_90017"}', 'unknown', NULL, 3,
  NULL, NULL, NULL, m20, m5, 2 FROM t;
INSERT INTO attempts SELECT 12, 1, m20, m5, 'error', 'upstream said ' || char(27) || '[31mFAILED' || char(27) || '[0m (circuit open)', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 12, 1, m20, 'circuit_open', '{"breaker":"payments-eu"}' FROM t;

-- 13. unknown, op type with no op_types row: the contract is unknown, so a
--     same-key retry is refused.
INSERT INTO operations SELECT 13, 'stark-ind', 'provision_account', 'prov-ac-5521',
  'sha256:1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b',
  '{"plan":"enterprise","seats":250}', 'unknown', NULL, 3,
  NULL, NULL, NULL, h2, h1, 2 FROM t;
INSERT INTO attempts SELECT 13, 1, h2, h1, 'timeout', 'no reply within 60s', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 13, 1, h1, 'timeout', NULL FROM t;

-- 14. exhausted, with attempt 2 committed ord-88301 before its reply was
--     lost: not applied is refused; applied with the pre-filled id is right.
INSERT INTO operations SELECT 14, 'globex', 'place_order', 'ord-7790-g',
  'sha256:2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c',
  '{"amount_cents":31000,"currency":"EUR","sku":"GX-SWITCH-48"}', 'exhausted', NULL, 2,
  p4h, NULL, NULL, h2, m40, 4 FROM t;
INSERT INTO attempts SELECT 14, 1, h2, h2, 'error', 'HTTP 502 bad gateway', NULL FROM t;
INSERT INTO attempts SELECT 14, 2, h1, m40, 'timeout', 'no reply within 30s', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 14, 1, h2, 'provider_error', '{"status":502}' FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 14, 2, h1, 'committed', '{"effect_id":"ord-88301"}' FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 14, 2, m40, 'timeout', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 14, NULL, m40, 'budget_exhausted', NULL FROM t;

-- 15. unknown, idempotent, retried once already and replayed: the decision
--     `settle demo` records turns it into retry_pending with a queued request.
INSERT INTO operations SELECT 15, 'acme-corp', 'refund_payment', 'rfd-11977',
  'sha256:3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d',
  '{"amount_cents":2500,"payment":"pay_90102"}', 'unknown', NULL, 3,
  NULL, NULL, NULL, h1, m20, 2 FROM t;
INSERT INTO attempts SELECT 15, 1, h1, m20, 'timeout', 'no reply within 30s', NULL FROM t;
INSERT INTO events (op_id, attempt, at, event, detail) SELECT 15, 1, m20, 'timeout', NULL FROM t;

-- The ordinary traffic around them: 60 completed operations over three days.
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60)
INSERT INTO operations (id, account, op_type, idem_key, fingerprint, params, state,
    result_id, max_attempts, deadline_at, lease_expires_at, key_expires_at,
    created_at, updated_at, version)
SELECT 100 + i,
  CASE i % 5 WHEN 0 THEN 'acme-corp' WHEN 1 THEN 'globex' WHEN 2 THEN 'initech'
             WHEN 3 THEN 'umbrella' ELSE 'wayne-ent' END,
  CASE i % 3 WHEN 0 THEN 'create_report' WHEN 1 THEN 'place_order' ELSE 'refund_payment' END,
  printf('auto-%05d', 40000 + i),
  printf('sha256:%064x', 1000 + i),
  printf('{"seq":%d}', i),
  'completed', printf('res-%05d', 50000 + i), 3, NULL, NULL, NULL,
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', printf('-%d minutes', 4320 - i * 70)),
  strftime('%Y-%m-%dT%H:%M:%SZ', 'now', printf('-%d minutes', 4319 - i * 70)),
  2
FROM n;
INSERT INTO attempts (op_id, attempt, started_at, ended_at, outcome, error, response)
SELECT id, 1, created_at, updated_at, 'success', NULL, printf('{"id":"%s"}', result_id)
FROM operations WHERE id > 100;
INSERT INTO events (op_id, attempt, at, event, detail)
SELECT id, 1, updated_at, 'success', NULL FROM operations WHERE id > 100;
