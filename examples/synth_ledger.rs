//! Writes a synthetic ledger of N operations, for trying the console and the
//! CLI at scale: `cargo run --release --example synth_ledger -- big.db 1000000`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use settle::store::Ledger;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().ok_or("usage: synth_ledger PATH [N]")?);
    let n: u64 = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let start = Instant::now();
    settle::synth::write(&path, n)?;
    let ledger_size = std::fs::metadata(&path)?.len();
    let _ = Ledger::open(&path, settle::store::Access::ReadOnly)?;
    eprintln!(
        "wrote {n} operations to {} in {:.1}s ({} MiB)",
        path.display(),
        start.elapsed().as_secs_f64(),
        ledger_size >> 20
    );
    Ok(())
}
