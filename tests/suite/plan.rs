//! `brigade compare --plan`: the checked plan of a comparison as JSON, nothing run — every
//! isolated run and side-by-side cell by name, in the order compare makes them, and one plan per
//! comparison when stores are a dimension.

use std::process::Command;

use serde_json::Value;

/// `brigade compare --plan ARGS` with its output folder under `out`: the JSON it printed.
fn plan(out: &std::path::Path, args: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args(["compare", "--plan", "--seed", "7", "--out"])
        .arg(out)
        .args(args)
        .output()
        .expect("brigade runs");
    assert!(
        output.status.success(),
        "compare --plan failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("--plan prints JSON")
}

#[test]
fn compare_plan_lists_every_run_in_order_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let plan = plan(
        &out,
        &[
            "--runtimes",
            "hyper,hyper,axum",
            "--scenarios",
            "waiter,all",
            "--users",
            "10,20",
            "--repeat",
            "2",
            "--store",
            "memory",
        ],
    );
    let runs = plan["isolated_runs"].as_array().unwrap();
    // runtimes × scenarios × users × preloads × repeats, each cell's runs back to back with the
    // first runtime rotating: the order compare makes them in.
    assert_eq!(runs.len(), 3 * 2 * 2 * 2);
    let first_of_cell: Vec<&str> = runs
        .chunks(3)
        .map(|cell| cell[0]["runtime"].as_str().unwrap())
        .collect();
    assert_eq!(&first_of_cell[..4], ["hyper", "hyper#2", "axum", "hyper"]);
    assert_eq!(runs[0]["scenario"], "waiter");
    assert_eq!(runs.last().unwrap()["repeat"], 2);
    // Side by side: one cell per scenario × preload × users.
    assert_eq!(plan["side_by_side_cells"].as_array().unwrap().len(), 2 * 2);
    let settings = &plan["settings"];
    assert_eq!(
        settings["runtimes"],
        serde_json::json!(["hyper", "hyper#2", "axum"])
    );
    assert_eq!(settings["store"], "memory");
    assert_eq!(settings["seed"], 7);
    assert_eq!(
        settings["services"],
        serde_json::json!(["waiter", "tables", "kitchen"])
    );
    assert!(plan["threads"]["server_workers"].as_u64().unwrap() >= 1);
    assert!(plan["estimate_s"].as_f64().unwrap() > 0.0);
    assert!(
        !out.exists(),
        "--plan wrote {} though it runs nothing",
        out.display()
    );
}

#[test]
fn compare_plan_gives_one_plan_per_store_and_refuses_what_the_run_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(
        &dir.path().join("out"),
        &[
            "--stores",
            "memory,embedded",
            "--runtimes",
            "hyper",
            "--scenarios",
            "waiter",
            "--users",
            "10",
            "--no-side-by-side",
        ],
    );
    let plans = plan["comparisons"].as_array().unwrap();
    let stores: Vec<&str> = plans
        .iter()
        .map(|p| p["settings"]["store"].as_str().unwrap())
        .collect();
    assert_eq!(stores, ["memory", "embedded"]);
    assert!(plans
        .iter()
        .all(|p| p["side_by_side_cells"] == serde_json::json!([])));

    let refused = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args(["compare", "--plan", "--scenarios", "no-such-scenario"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("no-such-scenario"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
