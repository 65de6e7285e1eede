//! `deepread bench` end to end on the tiny fixture model: one row per batch size, and bad arguments refused.

use std::path::Path;
use std::process::{Command, Output};

fn bench(args: &[&str]) -> Output {
    let tiny = Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/fixtures/tiny_native");
    Command::new(env!("CARGO_BIN_EXE_deepread"))
        .arg("bench")
        .arg("--model")
        .arg(tiny)
        .args(args)
        .output()
        .expect("deepread runs")
}

#[test]
fn bench_prints_a_row_per_batch_size() {
    let run = bench(&["--pages", "1,2", "--tokens", "4", "--crops", "2"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| {
            l.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|cols| cols.first().is_some_and(|c| c.parse::<usize>().is_ok()))
        .collect();
    assert_eq!(rows.iter().map(|r| r[0]).collect::<Vec<_>>(), ["1", "2"]);
    for row in &rows {
        // pages, vision+prefill, vision, prefill, decode ms/step, tokens/s, memory
        let tokens_per_s: f64 = row[5].parse().unwrap();
        assert!(tokens_per_s > 0.0, "{stdout}");
        assert_eq!(row[6], "n/a", "no GPU memory figure on the CPU");
    }
    assert!(stdout.contains("2 tiles + global view"), "{stdout}");
}

#[test]
fn bench_refuses_a_single_token_and_a_missing_model() {
    let run = bench(&["--tokens", "1"]);
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("--tokens must be at least 2"));
    let missing = Command::new(env!("CARGO_BIN_EXE_deepread"))
        .args(["bench", "--model", "/nonexistent/model"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("config.json missing"));
}
