//! A decision's change to a mapped table's row, inside the job queues'
//! decision transaction ([`crate::store::jobqueue`]'s `decisions.rs`: the
//! trail's write lock, the row locked and reread, the version checked,
//! settle's audit row). The team's own statement for the decision runs
//! with the row's id, the version settle read and the operator's result
//! id, and must change exactly that one row: any other count rolls the
//! whole decision back (a version conflict, exit 4). A decision the
//! mapping has no statement for is settle's audit row only.

use std::path::Path;

use postgres::GenericClient;
use postgres::types::ToSql;

use super::file::{Field, Mapping};
use super::sql::{PARAMS, server_words};
use crate::domain::State;
use crate::domain::rules::Rule;
use crate::error::{Error, Result};
use crate::store::decide::StateChange;
use crate::store::jobqueue::engine::EngineWrites;
use crate::store::postgres::pg_error;

/// Runs the mapping's statement for the decision, guarded on the
/// version the operator saw; without one, the row stays as it is.
pub(in crate::store::jobqueue) fn change_state<C: GenericClient>(
    tx: &mut C,
    writes: &EngineWrites,
    mapping: &Mapping,
    change: &StateChange,
    shown: &Path,
) -> Result<Option<i64>> {
    let statement = match change.to_state {
        State::Completed => &mapping.applied,
        State::NotApplied => &mapping.not_applied,
        State::RetryPending => &mapping.retry_same_key,
        other => {
            return Err(Error::Refused {
                op: change.op,
                rule: Rule::StateAllows,
                reason: format!(
                    "settle cannot return a mapped row to {other}; nothing was written"
                ),
            });
        }
    };
    let Some(field) = statement else {
        return Ok(Some(change.version));
    };
    let args: [&(dyn ToSql + Sync); 3] = [&change.op.0, &change.version, &change.result_id];
    let prepared = tx
        .prepare_typed(&field.text, &PARAMS)
        .map_err(|e| statement_failed(mapping, field, &e))?;
    let changed = tx
        .execute(&prepared, &args)
        .map_err(|e| statement_failed(mapping, field, &e))?;
    if changed == 0 {
        // The row is not at the version the operator saw: the caller
        // refuses it as a conflict and rolls back.
        return Ok(None);
    }
    if changed > 1 {
        return Err(mapping.refused(
            field,
            &format!("changed {changed} rows, not the one decided on, so nothing was written"),
            "make the statement's WHERE name the one row: WHERE id = $1 AND <version> = $2",
        ));
    }
    let after = tx
        .query_opt(writes.after, &[&change.op.0])
        .map_err(|e| pg_error(shown, "reading the row's new version", e))?;
    match after {
        Some(row) => Ok(Some(
            row.try_get(1)
                .map_err(|e| pg_error(shown, "reading the row", e))?,
        )),
        None => Ok(None),
    }
}

/// The team's statement failed: its line and the server's words.
fn statement_failed(mapping: &Mapping, field: &Field, e: &postgres::Error) -> Error {
    mapping.refused(
        field,
        &format!(
            "failed on the server, so nothing was written: {}",
            server_words(e)
        ),
        "correct the statement in the mapping file",
    )
}
