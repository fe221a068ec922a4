//! Recording probes in a PostgreSQL ledger (`settle_probes`, append-only by
//! its triggers). A probe changes no operation.

use postgres::GenericClient;

use super::conn::Pg;
use crate::domain::NewProbe;
use crate::error::Result;
use crate::store::backend::Probes;

/// Appends one probe to the `settle_probes` the session's search path
/// finds first (a ledger's own, or settle's schema beside a job queue's
/// tables); its id.
pub(crate) fn insert_probe<C: GenericClient>(
    client: &mut C,
    p: &NewProbe,
) -> std::result::Result<i64, postgres::Error> {
    client
        .query_one(
            "INSERT INTO settle_probes (op_id, idem_key, command, outcome, result_id, exit,
                output, operator, probed_at, duration_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::timestamptz, $10)
             RETURNING id",
            &[
                &p.op_id.0,
                &p.idem_key,
                &p.command,
                &p.outcome.as_str(),
                &p.result_id,
                &p.exit,
                &p.output,
                &p.operator,
                &p.probed_at,
                &p.duration_ms,
            ],
        )
        .and_then(|row| row.try_get(0))
}

impl Probes for Pg {
    fn record_probe(&mut self, p: &NewProbe) -> Result<i64> {
        let shown = self.shown.clone();
        insert_probe(self.writer()?, p)
            .map_err(|e| super::error::pg_error(&shown, "recording a probe", e))
    }
}
