//! End to end: `brigade compare --quick` over two runtimes with the real binary, one scenario and
//! one user count, checking the three reports and that their numbers hold together.

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
