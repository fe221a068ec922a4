//! A job queue's [`Backend`]: settle offers none of the optional parts on
//! it, so imports and copies are refused before anything is written,
//! naming the engine ([`JobQueue::refusal`]), and settle's worker finds no
//! retry to claim (the engine's own runs its jobs).

use super::session::JobQueue;
use crate::error::Error;
use crate::store::backend::{Backend, Capability};

impl Backend for JobQueue {
    fn refusal(&self, lacking: Capability) -> Error {
        self.refusal(match lacking {
            Capability::Retries => "run a retry of",
            Capability::Import => "import operations as",
            Capability::Transfer => "copy",
        })
    }
}
