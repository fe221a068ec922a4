//! A mapped table read as settle's operations: the view `o` and one row's
//! attempts and events, built as SQL text from the mapping's fields, and
//! the check at open that the database knows every one of them. The text
//! is made once per opened mapping and leaked, because [`EngineSql`] holds
//! `&'static str` for the compiled-in engines and a process opens a
//! mapping once or a few times (the console's reconnects reuse it).

use postgres::Client;
use postgres::types::Type;

use super::file::{Field, Mapping};
use crate::error::Result;
use crate::store::jobqueue::engine::{EngineSql, EngineWrites};
use crate::store::postgres::WAL_POSITION;

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// Each field as an SQL term, parenthesised so an expression reads as one.
fn term(f: &Field) -> String {
    format!("({})", f.text)
}

/// The view over the table: a stuck row is `unknown` (nobody knows its
/// outcome), a done one `completed` (`not_applied` where the mapping's
/// `failed` says its effect did not happen), one locked and not yet stuck
/// `reserved` (its lease is the stuck condition, not a time), any other
/// `retry_pending` (waiting for the team's completer).
fn view(m: &Mapping) -> String {
    let done = m.done.as_ref().map_or("false".to_string(), term);
    let failed = m.failed.as_ref().map_or("false".to_string(), term);
    let (stuck, locked) = (term(&m.stuck), term(&m.locked));
    let last_error = m.last_error.as_ref().map_or("NULL".to_string(), term);
    format!(
        "(SELECT {id}::bigint AS id,
            CASE WHEN {locked} IS NOT NULL AND NOT coalesce({done}, false)
                THEN 'locked' ELSE 'idle' END AS engine_state,
            CASE WHEN coalesce({done}, false) AND coalesce({failed}, false) THEN 'not_applied'
                WHEN coalesce({done}, false) THEN 'completed'
                WHEN coalesce({stuck}, false) THEN 'unknown'
                WHEN {locked} IS NOT NULL THEN 'reserved' ELSE 'retry_pending' END AS state,
            coalesce({stuck}, false) AS stuck,
            {account}::text AS account, {op_type}::text AS op_type, {key}::text AS idem_key,
            'sha256:' || encode(sha256(convert_to(coalesce({params}::text, 'null'), 'UTF8')), 'hex')
                AS fingerprint,
            {params}::text AS params,
            CASE WHEN {last} IS NULL THEN 0 ELSE 1 END::bigint AS attempts,
            1::bigint AS max_attempts,
            CASE WHEN coalesce({done}, false) THEN 'finished'
                WHEN {locked} IS NOT NULL THEN 'locked' ELSE 'inserted' END AS last_event,
            {last_error}::text AS last_error,
            NULL::text AS result_id,
            CASE WHEN {locked} IS NOT NULL AND NOT coalesce({done}, false)
                AND NOT coalesce({stuck}, false) THEN 'infinity'::timestamptz END
                AS lease_expires_at,
            {created}::timestamptz AS created_at,
            greatest({created}::timestamptz, {last}::timestamptz, {locked}::timestamptz)
                AS updated_at,
            {version}::bigint AS version
         FROM {table}) o",
        id = term(&m.id),
        account = term(&m.account),
        op_type = term(&m.op_type),
        key = term(&m.key),
        params = term(&m.params),
        last = term(&m.last_attempt),
        created = term(&m.created),
        version = term(&m.version),
        table = m.table.text,
    )
}

/// The mapping's table as an engine: the shared list, filter and count
/// statements run over its view.
pub(super) fn engine(m: &Mapping) -> &'static EngineSql {
    let view = leak(view(m));
    let (table, id, version) = (&m.table.text, term(&m.id), term(&m.version));
    let (last, locked) = (term(&m.last_attempt), term(&m.locked));
    let done = m.done.as_ref().map_or("false".to_string(), term);
    let lock = leak(format!(
        "SELECT 1 FROM {table} WHERE {id} = $1::bigint FOR UPDATE"
    ));
    let after = leak(format!(
        "SELECT 'mapped', {version}::bigint FROM {table} WHERE {id} = $1::bigint"
    ));
    // The statements the engines run are empty here: a mapped table's
    // decisions take the row's version as well ([`super::decide`]).
    let writes: &'static EngineWrites = Box::leak(Box::new(EngineWrites {
        lock,
        completed: &[],
        not_applied: &[],
        removed: None,
        retry: &[],
        after,
        completed_word: "mapped",
        not_applied_word: "mapped",
        retry_word: "mapped",
    }));
    Box::leak(Box::new(EngineSql {
        name: leak(format!("the {table} mapping")),
        jobs: leak(table.clone()),
        from: view,
        row_source: leak(format!(
            "SELECT o.id, o.state, o.account, o.op_type, o.idem_key, o.attempts, o.max_attempts,
                o.last_event, o.last_error, o.result_id, o.lease_expires_at, o.created_at,
                o.updated_at, o.version, NULL::text FROM {view}"
        )),
        operation: leak(format!(
            "SELECT o.id, o.account, o.op_type, o.idem_key, o.fingerprint, o.params, o.state,
                o.result_id, o.max_attempts, NULL::timestamptz, o.lease_expires_at,
                NULL::timestamptz, o.created_at, o.updated_at, o.version FROM {view}
             WHERE o.id = $1"
        )),
        // The one attempt the table keeps: its last run, finished or not.
        attempts: leak(format!(
            "SELECT {id}::bigint, 1::bigint, {last}::timestamptz,
                CASE WHEN coalesce({done}, false) THEN {last}::timestamptz END,
                CASE WHEN coalesce({done}, false) THEN 'success' ELSE 'in_flight' END,
                NULL::text, NULL::text
             FROM {table} WHERE {id} = $1::bigint AND {last} IS NOT NULL"
        )),
        events: leak(format!(
            "SELECT row_number() OVER (ORDER BY t.at, t.ord), $1::bigint, t.attempt, t.at,
                t.event, t.detail
             FROM (
                SELECT 0 AS ord, NULL::bigint AS attempt, {created}::timestamptz AS at,
                    'inserted' AS event, NULL::text AS detail
                FROM {table} WHERE {id} = $1::bigint
                UNION ALL
                SELECT 1, 1::bigint, {locked}::timestamptz, 'locked', NULL
                FROM {table} WHERE {id} = $1::bigint AND {locked} IS NOT NULL
             ) t ORDER BY 1",
            created = term(&m.created)
        )),
        attempt_errors: "(SELECT NULL::bigint AS op_id, NULL::text AS error WHERE false) a",
        queue_candidates: "o.stuck",
        running: "locked",
        // The team's table keeps no log of changes: the WAL position moves
        // with every commit, as for River.
        data_version: WAL_POSITION,
        writes: Some(writes),
    }))
}

/// Whether the database has the mapping's table (`to_regclass`).
pub(super) fn has_table(
    client: &mut Client,
    m: &Mapping,
) -> std::result::Result<bool, postgres::Error> {
    client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&m.table.text])?
        .try_get(0)
}

/// Asks the server about every field, one at a time so a refusal names
/// the line it is on: the table, each expression in a `SELECT ... LIMIT
/// 0` (the id and version as bigints, the stuck and done conditions as
/// booleans), and each decision statement prepared (never run), with
/// at most the three parameters settle gives, except on a standby.
pub(super) fn validate(client: &mut Client, m: &Mapping) -> Result<()> {
    let table = &m.table.text;
    let ask = |client: &mut Client, field: &Field, sql: String| {
        client.prepare(&sql).map(|_| ()).map_err(|e| {
            m.refused(
                field,
                &format!("is refused by the server: {}", server_words(&e)),
                "correct the name or expression in the mapping file",
            )
        })
    };
    ask(client, &m.table, format!("SELECT FROM {table} LIMIT 0"))?;
    for field in m.expressions() {
        let typed = match field.name {
            "id" | "version" => "::bigint",
            "stuck" | "done" | "failed" => "::boolean",
            "created" | "last_attempt" | "locked" => "::timestamptz",
            _ => "::text",
        };
        ask(
            client,
            field,
            format!("SELECT ({}){typed} FROM {table} LIMIT 0", field.text),
        )?;
    }
    // A standby refuses the write lock preparing an UPDATE takes; the
    // primary, where decisions go, checks them when they run.
    let standby: bool = client
        .query_one("SELECT pg_is_in_recovery()", &[])
        .and_then(|r| r.try_get(0))
        .map_err(|e| {
            m.refused(
                &m.table,
                &format!("cannot be checked: {}", server_words(&e)),
                "try again",
            )
        })?;
    for field in m.statements().into_iter().filter(|_| !standby) {
        let prepared = client.prepare_typed(&field.text, &PARAMS).map_err(|e| {
            m.refused(
                field,
                &format!("is refused by the server: {}", server_words(&e)),
                "correct the statement in the mapping file",
            )
        })?;
        if prepared.params().len() > 3 {
            return Err(m.refused(
                field,
                &format!("takes {} parameters", prepared.params().len()),
                "use $1 (the row's id), $2 (the version settle read) and $3 (the result id) only",
            ));
        }
    }
    Ok(())
}

/// The types of what a decision statement is given: the row's id, the
/// version settle read, the operator's result id. Said, not inferred, so
/// `$1` compares with an `int` key and an unused `$3` is no error.
pub(super) const PARAMS: [Type; 3] = [Type::INT8, Type::INT8, Type::TEXT];

/// What the server said, in its own words (which may quote the row).
pub(super) fn server_words(e: &postgres::Error) -> String {
    let words = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    };
    crate::text::sanitize(&words).into_owned()
}
