//! SQLite's [`Backend`]: it offers every optional part of the contract.

use super::conn::Sqlite;
use crate::store::backend::{Backend, Import, ReadModel, Retries, Transfer};

impl Backend for Sqlite {
    fn retries(&mut self) -> Option<&mut dyn Retries> {
        Some(self)
    }

    fn importer(&mut self) -> Option<&mut dyn Import> {
        Some(self)
    }

    fn transfer(&self) -> Option<&dyn Transfer> {
        Some(self)
    }

    fn transfer_mut(&mut self) -> Option<&mut dyn Transfer> {
        Some(self)
    }

    fn read_model(&self) -> Option<&dyn ReadModel> {
        Some(self)
    }
}
