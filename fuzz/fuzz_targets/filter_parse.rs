//! Fuzz target: any text typed as a filter (`settle list --filter`, the
//! console's `/`) is parsed without a panic. Owns nothing else.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Filters arrive as Rust strings (argv, key presses), so only valid
    // UTF-8 can reach the parser.
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = settle::query::Query::parse(text);
    }
});
