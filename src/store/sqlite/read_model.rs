//! SQLite's [`ReadModel`]: the read model beside the ledger
//! ([`super::model`]) caught up a bounded step at a time, once it is there.

use super::conn::Sqlite;
use crate::domain::CatchUp;
use crate::error::Result;
use crate::store::backend::{ReadModel, Waiter};

impl ReadModel for Sqlite {
    fn catch_up_in_steps(&self, waiter: Waiter) {
        if let Some(model) = &self.model {
            model.catch_up_in_steps(waiter);
        }
    }

    fn catching_up(&self) -> Option<CatchUp> {
        self.model.as_ref().and_then(|m| m.catching_up())
    }

    fn catch_up(&self) -> Result<Option<CatchUp>> {
        match &self.model {
            Some(model) => model.catch_up_step(),
            None => Ok(None),
        }
    }
}
