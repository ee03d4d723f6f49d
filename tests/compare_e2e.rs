//! End to end with the real binary: `brigade compare --quick` over two runtimes, one scenario and
//! one user count, checking the three reports and that their numbers hold together; and
//! `brigade study storage --quick`, whose reports come from the same writer.

use std::process::Command;

use brigade_loadtests::report::json;

#[test]
fn compare_quick_over_two_runtimes_writes_three_consistent_reports() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args([
            "compare",
            "--quick",
            "--runtimes",
            "axum,hyper",
            "--store",
            "embedded",
            "--scenarios",
            "waiter",
            "--users",
            "4",
            "--duration",
            "1500ms",
            "--warmup",
            "300ms",
            "--no-progress",
            "--out",
        ])
        .arg(out.path())
        .output()
        .expect("brigade runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let json_path = out.path().join("report.json");
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    let report = json::read(&json_path).unwrap();

    // One run per runtime, both completed, with real traffic and few errors.
    assert_eq!(report.runs.len(), 2, "{stdout}");
    let mut runtimes: Vec<&str> = report.runs.iter().map(|r| r.runtime.as_str()).collect();
    runtimes.sort_unstable();
    assert_eq!(runtimes, ["axum", "hyper"]);
    for run in &report.runs {
        let result = run
            .result
            .as_ref()
            .unwrap_or_else(|| panic!("{} failed: {:?}", run.runtime, run.error));
        let total = &result.total;
        assert!(
            // Real traffic, but no speed goal: a debug build on a busy 2-core machine can be slow.
            total.requests >= 10,
            "{}: only {} requests",
            run.runtime,
            total.requests
        );
        // hits/s × measured seconds ≈ requests counted.
        let implied = total.hits_per_s * result.elapsed_s;
        let gap = (implied - total.requests as f64).abs() / total.requests as f64;
        assert!(
            gap < 0.01,
            "{}: {implied:.1} implied vs {} counted",
            run.runtime,
            total.requests
        );
        assert!(
            (result.elapsed_s - 1.5).abs() < 0.5,
            "measured {} s",
            result.elapsed_s
        );
        assert!(
            total.errors.total() * 100 <= total.requests,
            "{}: {:?}",
            run.runtime,
            total.errors
        );
        // The server did the work: it used CPU and memory during the window.
        assert!(
            run.server.cpu_percent > 1.0,
            "{}: server CPU {:?}",
            run.runtime,
            run.server
        );
        assert!(
            run.server.peak_rss_mib > 1.0,
            "{}: server RSS {:?}",
            run.runtime,
            run.server
        );
        assert!(run.generator_cpu_percent > 0.0);
    }

    // The table's numbers are the runs' numbers, in JSON and in markdown alike.
    assert_eq!(report.rows.len(), 2);
    for row in &report.rows {
        let run = report
            .runs
            .iter()
            .find(|r| r.runtime == row.runtime)
            .unwrap();
        let result = run.result.as_ref().unwrap();
        assert!((row.hits_per_s - result.total.hits_per_s).abs() < 1e-6);
        assert_eq!(row.requests, result.total.requests);
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("| {} | 4 |", row.runtime)))
            .unwrap_or_else(|| panic!("no markdown row for {}", row.runtime));
        assert!(
            line.contains(&format!("| {:.1} |", row.hits_per_s)),
            "{line}"
        );
        assert!(line.contains(&format!("| {} |", row.requests)), "{line}");
    }
    assert_eq!(report.scenarios.len(), 1);
    assert!(md.contains(&format!("**{}**", report.scenarios[0].verdict.label())));

    // Every server came up and went down cleanly, and the setup is recorded.
    assert_eq!(report.servers.len(), 2);
    for server in &report.servers {
        let stop = server.stop.as_ref().expect("stopped");
        assert_eq!(
            stop.to_string(),
            "stopped on SIGTERM, exit 0",
            "{}",
            server.runtime
        );
        assert!(
            !std::path::Path::new(&format!("/proc/{}", server.pid)).exists(),
            "server process left behind"
        );
    }
    assert!(report.threads.server_workers >= 1);
    assert!(report.machine.cores >= 1);
    assert!(md.contains("## Setup") && md.contains("Threads:"));

    assert!(html.contains("<svg"), "charts are inline SVG");
    assert!(html.contains("waiter: throughput per runtime"));

    // The summary reached the terminal.
    assert!(stdout.contains("# Brigade runtime comparison"), "{stdout}");
}

/// `brigade study storage --quick` with the real binary, through the store and through HTTP (the
/// restaurant's registered growth: kitchen orders grown by appending items, on a `brigade serve` the
/// study starts and stops): the three reports, both ways in with the counts asked, every document
/// read back checked. The library's own test covers every store and phase in detail (and mongo when
/// `MONGODB_URI` is set).
#[test]
fn study_storage_quick_through_the_store_and_http_writes_the_general_report() {
    use brigade_loadtests::report::study::StudyReport;
    use brigade_loadtests::study::storage::plan::Counts;
    use brigade_loadtests::study::storage::report::{GROUPS_TABLE, PHASES_TABLE};

    let out = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args([
            "study",
            "storage",
            "--quick",
            "--stores",
            "embedded",
            "--via",
            "store,http",
            "--runtime",
            "hyper",
            "--data-dir",
        ])
        .arg(data.path())
        .arg("--out")
        .arg(out.path())
        .env_remove("MONGODB_URI")
        .output()
        .expect("brigade runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "study failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let report: StudyReport = json::read_as(&out.path().join("report.json")).unwrap();
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(md.starts_with("# Brigade storage study") && md.contains("## Setup"));
    assert!(html.contains("<svg") && html.contains("ms per operation against document size"));
    assert!(stdout.contains("# Brigade storage study"), "{stdout}");

    let c = Counts::QUICK;
    let phases = report.table(PHASES_TABLE).unwrap();
    for via in ["store", "HTTP (hyper)"] {
        let at = [
            ("store", "embedded"),
            ("via", via),
            ("study", "growing"),
            ("phase", "read + grow"),
        ];
        assert_eq!(
            phases.value(&at, "operations"),
            Some(c.growth_ops as f64),
            "{via}"
        );
        assert!(
            phases.value(&at, "on disk").is_some_and(|d| d > 0.0),
            "{via}"
        );
        let groups = report.table(GROUPS_TABLE).unwrap();
        assert_eq!(
            groups.rows_at(&[("via", via)]).len() as u64,
            c.groups(),
            "{via}"
        );
    }
    // The fixed phase goes through the store only.
    assert_eq!(
        phases
            .rows_at(&[("via", "HTTP (hyper)"), ("study", "fixed")])
            .len(),
        0
    );
    assert_eq!(
        phases
            .rows_at(&[("via", "store"), ("study", "fixed")])
            .len(),
        3
    );
    let checked = 2 * c.growth_ops * 2 + c.fixed_reads + 2 * c.fixed_rewrites;
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains(&format!("({checked} reads and answers checked"))),
        "{:?}",
        report.notes
    );
    assert!(report
        .setup
        .lines
        .iter()
        .any(|l| l.label == "HTTP growth" && l.text.contains("kitchen orders")));
}
