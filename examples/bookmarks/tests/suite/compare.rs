//! `brigade compare --binary <bookmarks>` on two runtimes with `--quick`: Brigade's comparison of a
//! service that is not the restaurant, from the contract alone (the server's JSON announcements,
//! `runtimes --json`, `/ready`).
//!
//! Needs the `brigade` binary: `BRIGADE_BIN`, else the one beside this crate's binary (`cargo build
//! --bin brigade`; a workspace-wide `cargo test` builds it).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The `brigade` binary to run compare with.
fn brigade() -> PathBuf {
    if let Some(bin) = std::env::var_os("BRIGADE_BIN") {
        return bin.into();
    }
    let ours = PathBuf::from(env!("CARGO_BIN_EXE_bookmarks"));
    let beside = ours.with_file_name(format!("brigade{}", std::env::consts::EXE_SUFFIX));
    assert!(
        beside.is_file(),
        "no brigade binary at {} (run `cargo build --bin brigade` or set BRIGADE_BIN)",
        beside.display()
    );
    beside
}

#[test]
fn compare_measures_the_bookmarks_service_on_two_runtimes() {
    let out = tempfile::tempdir().unwrap();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/bookmarks.toml");
    let output = Command::new(brigade())
        .args(["compare", "--binary", env!("CARGO_BIN_EXE_bookmarks")])
        .args(["--runtimes", "axum,hyper", "--quick", "--store", "memory"])
        .args(["--scenarios", scenario, "--no-progress", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "compare failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("report.json")).unwrap()).unwrap();
    let runs = report["runs"].as_array().expect("runs");
    for runtime in ["axum", "hyper"] {
        let measured: Vec<&Value> = runs
            .iter()
            .filter(|r| r["runtime"] == runtime && r["scenario"] == "bookmarks")
            .collect();
        assert!(!measured.is_empty(), "no {runtime} run: {report}");
        for run in measured {
            let total = &run["result"]["total"];
            assert!(
                total["requests"].as_u64().unwrap_or(0) > 0,
                "{runtime}: {}",
                run["error"]
            );
        }
    }
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(md.contains("bookmarks"), "{md}");
}
