//! Times reading and analysing a 10,000-case drill file: the seven reference
//! cases repeated under new ids, written to a temp dir. Prints the median of
//! a few runs in milliseconds; asserts nothing (timings vary by machine).
//!
//! cargo bench --bench drill_read

use std::path::Path;
use std::time::Instant;

use serde_json::Value;
use settle::drill;

const CASES: usize = 10_000;
const RUNS: usize = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seven: Value =
        serde_json::from_str(include_str!("../tests/fixtures/drill-seven-cases.json"))?;
    let template = seven["cases"].as_array().ok_or("fixture has no cases")?;
    let cases: Vec<Value> = (0..CASES)
        .map(|i| {
            let mut case = template[i % template.len()].clone();
            let id = format!("{}-{i}", case["case"].as_str().unwrap_or("case"));
            case["case"] = id.into();
            case
        })
        .collect();
    let mut big = seven.clone();
    big["cases"] = cases.into();

    let dir = tempfile::tempdir()?;
    let path = dir.path().join("drill-results.json");
    std::fs::write(&path, serde_json::to_string(&big)?)?;
    let bytes = std::fs::metadata(&path)?.len();

    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        times.push(read_and_analyse(&path)?);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "drill_read: {CASES} cases ({:.1} MB): read+analyse median {:.1} ms over {RUNS} runs (min {:.1}, max {:.1})",
        bytes as f64 / 1e6,
        times[RUNS / 2],
        times[0],
        times[RUNS - 1]
    );
    Ok(())
}

fn read_and_analyse(path: &Path) -> Result<f64, settle::Error> {
    let start = Instant::now();
    let file = drill::read_file(path)?;
    let analysis = drill::analyse(&file);
    let elapsed = start.elapsed().as_secs_f64() * 1e3;
    // Keep the work observable so it cannot be optimised away.
    std::hint::black_box(&analysis);
    Ok(elapsed)
}
