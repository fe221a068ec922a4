//! Opens the console on a ledger, for trying it by hand before the CLI wires
//! it: `cargo run --example console -- LEDGER [--operator NAME] [--read-only]
//! [--drill FILE]... [--keymap FILE]`.

use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut options = settle::tui::Options {
        ledger: PathBuf::new(),
        drills: Vec::new(),
        operator: std::env::var("USER").unwrap_or_else(|_| "operator".to_string()),
        read_only: false,
        keymap: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--operator" => options.operator = args.next().unwrap_or_default(),
            "--read-only" => options.read_only = true,
            "--drill" => options.drills.extend(args.next().map(PathBuf::from)),
            "--keymap" => options.keymap = args.next().map(PathBuf::from),
            path => options.ledger = PathBuf::from(path),
        }
    }
    if let Err(e) = settle::tui::run(options) {
        eprintln!("{e}");
        std::process::exit(e.exit_code());
    }
}
