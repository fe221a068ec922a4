//! Recording what a receiver said to a probe: one append-only row of
//! `settle_probes` per lookup. A probe changes no operation; it is evidence
//! the operator decides on.

use rusqlite::params;

use super::conn::Sqlite;
use crate::domain::NewProbe;
use crate::error::Result;
use crate::store::backend::Probes;

impl Probes for Sqlite {
    fn record_probe(&mut self, p: &NewProbe) -> Result<i64> {
        let wait = self.wait;
        self.conn
            .prepare_cached(
                "INSERT INTO settle_probes (op_id, idem_key, command, outcome, result_id, exit,
                    output, operator, probed_at, duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    p.op_id.0,
                    p.idem_key,
                    p.command,
                    p.outcome.as_str(),
                    p.result_id,
                    p.exit,
                    p.output,
                    p.operator,
                    p.probed_at,
                    p.duration_ms,
                ])
            })
            .map_err(|e| self.err("recording a probe", e).busy_after(wait))?;
        Ok(self.conn.last_insert_rowid())
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;
    use tempfile::TempDir;

    use crate::domain::{NewProbe, OperationId, ProbeOutcome};
    use crate::store::{Access, Ledger, create_service_ledger, schema};

    const ONE_OPERATION: &str = "INSERT INTO operations (account, op_type, idem_key, fingerprint,
        state, max_attempts, created_at, updated_at)
        VALUES ('acme', 'create_report', 'k-1', 'sha256:00', 'unknown', 3,
                '2026-11-06T10:00:00Z', '2026-11-06T10:00:05Z');";

    fn probe(outcome: ProbeOutcome, result_id: Option<&str>) -> NewProbe {
        NewProbe {
            op_id: OperationId(1),
            idem_key: "k-1".into(),
            command: "/bin/lookup acme".into(),
            outcome,
            result_id: result_id.map(str::to_string),
            exit: "exit 0".into(),
            output: Some("report-77\n".into()),
            operator: "alice".into(),
            probed_at: "2026-11-30T15:00:00Z".into(),
            duration_ms: 12,
        }
    }

    /// A service's ledger with one operation, adopted by a writable open.
    fn adopted() -> (TempDir, Ledger) {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("l.db");
        create_service_ledger(&path, &format!("{}{ONE_OPERATION}", schema::SERVICE_TABLES))
            .unwrap();
        let (ledger, _) = Ledger::open(&path, Access::ReadWrite).unwrap();
        (dir, ledger)
    }

    #[test]
    fn probes_are_kept_in_order_with_the_operation_and_never_edited() {
        let (dir, mut ledger) = adopted();
        ledger
            .record_probe(&probe(ProbeOutcome::Unknown, None))
            .unwrap();
        ledger
            .record_probe(&probe(ProbeOutcome::Found, Some("report-77")))
            .unwrap();
        let probes = ledger.detail(OperationId(1)).unwrap().probes;
        assert_eq!(probes.len(), 2);
        assert_eq!(probes[1].probe.outcome, ProbeOutcome::Found);
        assert_eq!(probes[1].probe.result_id.as_deref(), Some("report-77"));

        let sql = Connection::open(dir.path().join("l.db")).unwrap();
        let edit = sql.execute(
            "UPDATE settle_probes SET outcome = 'found' WHERE id = 1",
            [],
        );
        assert!(edit.unwrap_err().to_string().contains("append-only"));
        let delete = sql.execute("DELETE FROM settle_probes", []);
        assert!(delete.unwrap_err().to_string().contains("append-only"));
    }

    #[test]
    fn a_schema_4_ledger_gains_probes_and_the_failed_status_on_a_writable_open() {
        let (dir, ledger) = adopted();
        drop(ledger);
        let path = dir.path().join("l.db");
        let sql = Connection::open(&path).unwrap();
        // What schema 4 looked like: no probes, no worker columns, and a
        // forward trigger that knows no `failed`.
        sql.execute_batch(
            "DROP TABLE settle_probes;
             ALTER TABLE retry_requests DROP COLUMN claimed_by;
             ALTER TABLE retry_requests DROP COLUMN claim_expires_at;
             ALTER TABLE retry_requests DROP COLUMN runs;
             ALTER TABLE retry_requests DROP COLUMN finished_at;
             ALTER TABLE retry_requests DROP COLUMN outcome;
             DROP TRIGGER settle_retry_requests_forward;
             CREATE TRIGGER settle_retry_requests_forward
               BEFORE UPDATE OF status ON retry_requests WHEN NEW.status IS NOT OLD.status
               AND NOT ((OLD.status = 'queued' AND NEW.status IN ('claimed', 'done', 'cancelled'))
                     OR (OLD.status = 'claimed' AND NEW.status = 'done'))
               BEGIN SELECT RAISE(ABORT, 'old'); END;
             INSERT INTO retry_requests (op_id, idem_key, requested_at, requested_by, status,
                 decision_id) VALUES (1, 'k-1', '2026-11-30T15:00:00Z', 'alice', 'claimed', 1);
             PRAGMA user_version = 4;",
        )
        .unwrap();

        // A read-only look still reads the operation, without probes.
        let (look, _) = Ledger::open(&path, Access::ReadOnly).unwrap();
        let detail = look.detail(OperationId(1)).unwrap();
        assert!(detail.probes.is_empty());
        assert_eq!(detail.retry_requests[0].progress.runs, 0);

        let (mut ledger, report) = Ledger::open(&path, Access::ReadWrite).unwrap();
        let line = report.upgraded.unwrap();
        let versions = format!("schema 4 -> {}", super::super::schema::SCHEMA_VERSION);
        assert!(line.contains(&versions), "{line}");
        assert!(line.contains("column retry_requests.claimed_by"), "{line}");
        ledger
            .record_probe(&probe(ProbeOutcome::NotFound, None))
            .unwrap();
        sql.execute(
            "UPDATE retry_requests SET status = 'failed', outcome = 'gone' WHERE id = 1",
            [],
        )
        .unwrap();
        let back = sql.execute(
            "UPDATE retry_requests SET status = 'queued' WHERE id = 1",
            [],
        );
        assert!(back.unwrap_err().to_string().contains("only moves forward"));
        let detail = ledger.detail(OperationId(1)).unwrap();
        assert_eq!(detail.retry_requests[0].status, "failed");
        assert_eq!(
            detail.retry_requests[0].progress.outcome.as_deref(),
            Some("gone")
        );
        assert_eq!(detail.probes.len(), 1);
    }
}
