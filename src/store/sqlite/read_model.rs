//! SQLite's [`ReadModel`]: the read model beside the ledger
//! ([`super::model`]) caught up a bounded step at a time, once it is there;
//! and set aside when it fails a read (its file damaged, deleted, or unable
//! to grow on a full disk), so reads go to the ledger's own tables while it
//! is made ready again off the reading thread.

use std::time::{Duration, Instant};

use super::conn::{Away, Sqlite};
use super::model::Model;
use crate::domain::CatchUp;
use crate::error::{Error, Fault, Result};
use crate::store::backend::{ReadModel, Waiter};

/// How long after a failed try the model is tried again (a disk still
/// full, a ledger SQLite cannot read).
const TRY_AGAIN: Duration = Duration::from_secs(5);

impl ReadModel for Sqlite {
    fn catch_up_in_steps(&self, waiter: Waiter) {
        if let Some(model) = &*self.model.borrow() {
            model.catch_up_in_steps(waiter);
        }
    }

    fn catching_up(&self) -> Option<CatchUp> {
        self.model.borrow().as_ref().and_then(|m| m.catching_up())
    }

    fn catch_up(&self) -> Result<Option<CatchUp>> {
        match &*self.model.borrow() {
            Some(model) => model.catch_up_step(),
            None => Ok(None),
        }
    }

    fn set_aside(&self, failed: &Error) -> bool {
        let Ok(mut slot) = self.model.try_borrow_mut() else {
            return false;
        };
        let damaged = matches!(
            failed,
            Error::Database {
                fault: Fault::Damaged,
                ..
            }
        );
        let Some(model) = slot.take_if(|m| damaged || m.is_broken()) else {
            return false;
        };
        let away = Away {
            damaged: model.file().filter(|_| damaged),
            waiter: model.waiter(),
            ..Away::default()
        };
        drop(model);
        // Cached statements name `rm`; a statement not yet reset holds it.
        self.conn.flush_prepared_statement_cache();
        let _ = self.conn.execute("DETACH DATABASE rm", []);
        if let Ok(mut slot) = self.away.try_borrow_mut() {
            *slot = Some(away);
        }
        // The rebuild starts now: nothing may read again for a while.
        drop(slot);
        self.come_back();
        true
    }
}

impl Sqlite {
    /// Brings a model set aside back when it is ready, built (or reopened)
    /// on a thread of its own. A connection opened read-only does so too:
    /// it keeps the model as it reads (the model is settle's, not the
    /// ledger's). Nothing waits on it.
    pub(super) fn come_back(&self) {
        let (Ok(mut away), Ok(mut model)) =
            (self.away.try_borrow_mut(), self.model.try_borrow_mut())
        else {
            return;
        };
        let Some(state) = away.as_mut() else {
            return;
        };
        if model.is_some() || state.not_before.is_some_and(|t| Instant::now() < t) {
            return;
        }
        let Some(back) = self.try_back(state) else {
            return;
        };
        if back.attach(&self.conn).is_err() {
            state.not_before = Some(Instant::now() + TRY_AGAIN);
            return;
        }
        if let Some(waiter) = state.waiter {
            back.catch_up_in_steps(waiter);
        }
        *model = Some(back);
        *away = None;
    }

    /// The model, once a try made it ready; a failed try waits
    /// [`TRY_AGAIN`] for the next.
    fn try_back(&self, state: &mut Away) -> Option<Model> {
        let id = super::schema::ledger_id(&self.conn, &self.path)
            .ok()
            .flatten();
        let Some(id) = id else {
            state.not_before = Some(Instant::now() + TRY_AGAIN);
            return None;
        };
        let rebuild = match state.rebuild.take() {
            Some(rebuild) if !rebuild.is_finished() => {
                state.rebuild = Some(rebuild);
                return None;
            }
            Some(rebuild) => rebuild,
            None => {
                let (path, wait, damaged) = (self.path.clone(), self.wait, state.damaged.take());
                state.rebuild = Some(std::thread::spawn(move || {
                    Model::rebuild(&path, &id, wait, damaged)
                }));
                return None;
            }
        };
        match rebuild.join() {
            Ok(Ok(back)) => Some(back),
            _ => {
                state.not_before = Some(Instant::now() + TRY_AGAIN);
                None
            }
        }
    }
}
