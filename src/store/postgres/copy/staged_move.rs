//! The end of a staged copy ([`super::staged`]): the new ledger's
//! empty tables dropped and the staged ones moved into their place, in one
//! transaction, with the grants the new ledger's tables had and their
//! autovacuum back on; then the staging schema, empty.

use super::staged::{EMPTY, STAGING};
use crate::error::Result;
use crate::store::copy::refuse_unless_empty;
use crate::store::postgres::conn::Pg;
use crate::store::postgres::error::pg_error;

impl Pg {
    /// Drops the new ledger's empty tables and functions and moves the
    /// staged ones into their place, with the grants the new ledger's
    /// tables had, in one transaction; then the staging schema, empty.
    pub(crate) fn move_in(&mut self, target: &str) -> Result<()> {
        let shown = self.shown.clone();
        let err = |e| pg_error(&shown, "moving the copied tables into the ledger", e);
        let mut tx = self.client.get_mut().transaction().map_err(err)?;
        tx.batch_execute("SET LOCAL statement_timeout = 0")
            .map_err(err)?;
        let mut list = |sql: &str| -> Result<Vec<String>> {
            tx.query(sql, &[&STAGING, &target])
                .map_err(err)?
                .iter()
                .map(|r| r.try_get(0).map_err(err))
                .collect()
        };
        let (old, functions) = (list(REPLACED)?, list(FUNCTIONS_REPLACED)?);
        let (grants, moves) = (list(GRANTS)?, list(MOVES)?);
        let awake = list(AUTOVACUUM)?;
        if !old.is_empty() {
            tx.batch_execute(&format!(
                "LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
                old.join(", ")
            ))
            .map_err(err)?;
        }
        let schema = format!("\"{}\"", target.replace('"', "\"\""));
        refuse_unless_empty(&shown, EMPTY, |table| {
            tx.query_one(
                &format!("SELECT EXISTS (SELECT 1 FROM {schema}.{table})"),
                &[],
            )
            .and_then(|r| r.try_get(0))
            .map_err(err)
        })?;
        let mut sql = Vec::new();
        if !old.is_empty() {
            sql.push(format!("DROP TABLE {}", old.join(", ")));
        }
        if !functions.is_empty() {
            sql.push(format!("DROP FUNCTION {}", functions.join(", ")));
        }
        sql.extend(grants);
        sql.extend(awake);
        sql.extend(moves);
        sql.push(format!("DROP SCHEMA {STAGING}"));
        tx.batch_execute(&sql.join(";\n")).map_err(err)?;
        tx.commit().map_err(err)
    }
}

/// The new ledger's tables (in schema `$2`) that a staged one (in `$1`)
/// takes the place of.
const REPLACED: &str = "SELECT format('%I.%I', $2::text, c.relname) FROM pg_class c \
     WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1) \
       AND c.relkind IN ('r', 'p') \
       AND to_regclass(format('%I.%I', $2::text, c.relname)) IS NOT NULL \
     ORDER BY 1";

/// The new ledger's functions that a staged one takes the place of.
const FUNCTIONS_REPLACED: &str = "SELECT format('%I.%I(%s)', $2::text, q.proname, \
         pg_get_function_identity_arguments(q.oid)) \
     FROM pg_proc p JOIN pg_proc q ON q.proname = p.proname \
       AND q.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = $2) \
       AND pg_get_function_identity_arguments(q.oid) = pg_get_function_identity_arguments(p.oid) \
     WHERE p.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1) \
     ORDER BY 1";

/// The grants on the new ledger's tables (given by default privileges of
/// its schema), made again on the staged tables that take their place.
const GRANTS: &str = "SELECT format('GRANT %s ON %I.%I TO %s%s', a.privilege_type, $1::text, \
         c.relname, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END, \
         CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END) \
     FROM pg_class c, aclexplode(c.relacl) a \
     WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $2) \
       AND c.relkind IN ('r', 'p') AND a.grantee <> c.relowner \
       AND to_regclass(format('%I.%I', $1::text, c.relname)) IS NOT NULL \
     ORDER BY 1";

/// The staged tables' autovacuum back on, as the new ledger's tables had it.
const AUTOVACUUM: &str = "SELECT format('ALTER TABLE %I.%I RESET (autovacuum_enabled)', $1::text, \
         relname) \
     FROM pg_class \
     WHERE relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1) \
       AND relkind = 'r' AND $2::text IS NOT NULL \
       AND 'autovacuum_enabled=off' = ANY (reloptions)";

/// Every staged table (with its keys, indexes, triggers and identities)
/// and function, moved into the new ledger's schema.
const MOVES: &str = "SELECT format('ALTER TABLE %I.%I SET SCHEMA %I', $1::text, relname, $2::text) \
     FROM pg_class \
     WHERE relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1) \
       AND relkind IN ('r', 'p') \
     UNION ALL \
     SELECT format('ALTER FUNCTION %I.%I(%s) SET SCHEMA %I', $1::text, proname, \
         pg_get_function_identity_arguments(oid), $2::text) \
     FROM pg_proc WHERE pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1)";
