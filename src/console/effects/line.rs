//! How an error reaches the status line: its first line. A leaf, so the
//! effects' own modules share it without importing their parent.

use crate::error::Error;

/// Errors carry a "what to do" line for the CLI; the status line has room
/// for the first, and for what the console does about a lost connection
/// (the CLI's "run the command again" is not the console's answer).
pub fn first_line(e: &Error) -> String {
    let first = e.to_string().lines().next().unwrap_or_default().to_string();
    if e.is_lost_connection() {
        format!("{first}; settle reconnects at the next read")
    } else {
        first
    }
}
