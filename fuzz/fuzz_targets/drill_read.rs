//! Fuzz target: any bytes as a `retry-drill/1` results file go through the
//! reader, the analysis, the import plan and both report printers without
//! a panic. Owns nothing else; it writes no file.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The CLI reads files with `read_to_string`, which refuses invalid
    // UTF-8 before the reader sees it; only text reaches `parse`.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = settle::drill::parse(Path::new("fuzz.json"), text) else {
        return;
    };
    let analysis = settle::drill::analyse(&file);
    let _ = settle::drill::import_plan(&file, "fuzz.json");
    let files = [(file, analysis)];
    let _ = settle::drill::render_text(&files);
    let _ = settle::drill::render_json(&files);
});
