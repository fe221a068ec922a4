//! Where a retry request stands (`retry_requests.status`), as a word the
//! code can match on instead of a string it compares. A worker other than
//! settle's may write a word we do not know: it is kept as it is
//! (`Unrecognized`) and shown, never coerced, as [`super::State`] does.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RetryStatus {
    /// Waiting for a worker.
    Queued,
    /// A worker holds it and is running the retry.
    Claimed,
    Done,
    Failed,
    /// Taken back by a decision before a worker claimed it.
    Cancelled,
    Unrecognized(String),
}

impl RetryStatus {
    pub fn parse(word: &str) -> RetryStatus {
        match word {
            "queued" => RetryStatus::Queued,
            "claimed" => RetryStatus::Claimed,
            "done" => RetryStatus::Done,
            "failed" => RetryStatus::Failed,
            "cancelled" => RetryStatus::Cancelled,
            other => RetryStatus::Unrecognized(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            RetryStatus::Queued => "queued",
            RetryStatus::Claimed => "claimed",
            RetryStatus::Done => "done",
            RetryStatus::Failed => "failed",
            RetryStatus::Cancelled => "cancelled",
            RetryStatus::Unrecognized(word) => word,
        }
    }
}

impl fmt::Display for RetryStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_as_written() {
        for word in ["queued", "claimed", "done", "failed", "cancelled", "paused"] {
            assert_eq!(RetryStatus::parse(word).as_str(), word);
        }
        assert_eq!(
            RetryStatus::parse("paused"),
            RetryStatus::Unrecognized("paused".to_string())
        );
    }
}
