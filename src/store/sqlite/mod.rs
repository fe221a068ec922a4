//! The SQLite backend of the ledger: opening, adopting and migrating a file,
//! paging through operations, reading one operation's history, recording
//! decisions atomically, importing operations. Only [`crate::store::Ledger`]
//! calls it, through [`crate::store::backend`]; it returns
//! [`crate::domain`] types and never a row. This file registers it.

mod backend;
mod chain;
mod columns;
mod conn;
mod decisions;
mod derived;
mod drills;
pub(crate) mod error;
mod import;
mod journal;
mod model;
mod one_decision;
mod open;
mod probes;
mod read_model;
mod reads;
mod retries;
pub mod schema;
pub(super) mod service;
mod session;
mod transfer;

use crate::store::backend::{Backend, Kind};

pub(crate) use conn::Sqlite;
pub(crate) use reads::filter::SqliteSql;

/// A SQLite file: whatever path no other backend claims.
pub(crate) const KIND: Kind = Kind {
    claims: |_| true,
    create: |path| Ok(Box::new(Sqlite::create(path)?)),
    create_if_absent: |path| {
        if path.exists() {
            return Ok(None);
        }
        Ok(Some(Box::new(Sqlite::create(path)?) as Box<dyn Backend>))
    },
    open: |path, access, wait, progress| {
        let (db, report) = Sqlite::open_waiting(path, access, wait, progress)?;
        Ok((Box::new(db), report))
    },
};

#[cfg(test)]
mod tests;
