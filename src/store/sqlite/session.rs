//! The SQLite backend's session under [`crate::store::backend`]'s
//! contract. (Every other part of the contract is implemented in the file
//! named after its trait: reads, history, decisions, probes, drills,
//! retries, import, transfer, read model, backend.)

use std::path::Path;

use super::conn::Sqlite;
use crate::domain::Declarations;
use crate::error::{Error, Result};
use crate::store::backend::Session;
use crate::store::interrupt::InterruptHandle;

impl Session for Sqlite {
    fn cache_within(&self, kib: i64) {
        super::model::cap_cache(&self.conn, kib);
        if let Some(model) = self.model.borrow().as_ref() {
            model.cache_within(kib);
        }
    }

    fn declare(&mut self, declarations: Declarations) {
        self.declared = declarations;
    }

    fn declarations(&self) -> &Declarations {
        &self.declared
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn file(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn schema_version(&self) -> i64 {
        super::schema::SCHEMA_VERSION
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn data_version(&self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| self.err("reading data_version", e))
    }

    fn reinspect(&mut self) -> Result<()> {
        let found = super::schema::inspect(&self.conn, &self.path)?;
        self.tables = found.tables();
        if self.model.get_mut().is_none() && self.away.get_mut().is_none() && found.read_model {
            // Another connection adopted the ledger or built its read
            // model: reads go through it from now on.
            let id = super::schema::ledger_id(&self.conn, &self.path)?;
            if let Some(model) =
                id.and_then(|id| super::model::Model::ready(&self.path, &id, self.wait))
            {
                model.attach(&self.conn)?;
                *self.model.get_mut() = Some(model);
            }
        }
        Ok(())
    }

    fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle::new(self.conn.get_interrupt_handle())
    }

    fn why_not_writable(&self) -> Error {
        super::open::not_writable(&self.path)
    }

    /// Not [`Self::why_not_writable`]: a file opened `--read-only` may well
    /// be writable, so the refusal names both ways out.
    fn ensure_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ledger(
                &self.path,
                "opened read-only",
                "open it without --read-only, from an account that may write the file",
            ));
        }
        Ok(())
    }
}
