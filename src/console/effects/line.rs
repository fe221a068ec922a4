//! How an error reaches the status line: its first line. A leaf, so the
//! effects' own modules share it without importing their parent.

use crate::error::Error;

/// Errors carry a "what to do" line for the CLI; the status line has room
/// for the first.
pub fn first_line(e: &Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}
