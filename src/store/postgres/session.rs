//! The PostgreSQL backend's session under [`crate::store::backend`]'s
//! contract. (Every other part of the contract is implemented in the file
//! of its concern: reads, history, decisions, probes, retries, import,
//! copy.)

use std::path::Path;
use std::time::Duration;

use super::conn::Pg;
use super::connect::stalls;
use super::stop_reasons::stall_bound;
use crate::domain::Declarations;
use crate::error::{Error, Result};
use crate::store::backend::Session;
use crate::store::interrupt::{Deadline, InterruptHandle};

impl Session for Pg {
    fn declare(&mut self, declarations: Declarations) {
        self.declared = declarations;
    }

    fn declarations(&self) -> &Declarations {
        &self.declared
    }

    fn path(&self) -> &Path {
        &self.shown
    }

    fn file(&self) -> Option<&Path> {
        None
    }

    fn schema_version(&self) -> i64 {
        super::schema::SCHEMA_VERSION
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn data_version(&self) -> Result<i64> {
        self.heard_version()
    }

    fn reinspect(&mut self) -> Result<()> {
        self.inspect_again()
    }

    fn interrupt_handle(&self) -> InterruptHandle {
        self.cancel_handle()
    }

    fn writes_blocked(&mut self) -> Option<String> {
        self.primary_gone()
    }

    fn read_from(&self) -> Option<String> {
        self.routed.borrow_mut().take()
    }

    fn why_not_writable(&self) -> Error {
        Error::ledger(
            &self.shown,
            "opened read-only",
            "open it without --read-only, as a role that may write the ledger",
        )
    }

    fn stall_deadline(&self, write: bool) -> Option<Deadline> {
        let hosts = self.address.hosts_shown();
        if !stalls::watched(&hosts) {
            return None;
        }
        // A decision waits for row locks up to the ledger's wait first.
        let wait = if write { self.wait } else { Duration::ZERO };
        Some(Deadline::arm(stall_bound() + wait, stalls::Cut(hosts)))
    }

    fn reconnect_after(&self, failed: &Error) -> bool {
        failed.is_lost_connection() && self.client.borrow().is_closed() && self.reconnect().is_ok()
    }
}
