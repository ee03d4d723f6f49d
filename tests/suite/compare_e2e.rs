//! End to end with the real binary: `brigade compare` over two runtimes on the memory and embedded
//! stores with `--preload 0,200` (every run on a fresh server, the preloaded data visible to the
//! fixtures, the CPU-per-request column, both verdicts, three consistent reports), `compare` on a
//! server started by a command template that serves one service (its name learned from the
//! announcement, scenarios for other services refused), the scenarios and targets `brigade load`
//! knows, `brigade serve --preload` on its own (lists total the preload, and a restart does not
//! double it), and `brigade study storage --quick`, whose reports come from the same writer.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use brigade_kit::conformance::TestClient;
use brigade_meter::pin::{available_cpus, spawn_pinned};
use brigade_meter::servers::{Listening, Preloaded};
use brigade_records::cpus::CpuPlan;
use brigade_records::result::LoadResult;
use brigade_report::verdict::Outcome;
use brigade_report::{json, Report, RunRecord};

/// A scenario whose fixture reads the 200th waiter by offset: it fails unless the store holds at
/// least 200 waiters before the fixtures, i.e. unless the preload is there.
const PRELOADED_CHECK: &str = r#"
name = "preloaded"
description = "Reads the waiters the preload made; its fixture fails unless at least 200 are there."
service = "waiter"

[[setup]]
path = "/waiters?offset=199&limit=1"
times = 1
expect = [200]
capture = { old = "/items/0/id" }

[[request]]
name = "GET /waiters/{id}"
path = "/waiters/{{pick old}}"
"#;

/// Runs `brigade compare` with `args` into `out`, and returns its report and stdout. A test that
/// is not about the side-by-side runs leaves them out (`--no-side-by-side`): each adds a window
/// set per cell, and these tests check the isolated runs.
fn compare(out: &Path, args: &[&str]) -> (Report, String) {
    let side = args.iter().any(|a| {
        a.starts_with("--side-by-side") || *a == "--no-isolated" || *a == "--no-side-by-side"
    });
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .arg("compare")
        .args(args)
        .args(if side {
            &[][..]
        } else {
            &["--no-side-by-side"][..]
        })
        .args(["--no-progress", "--out"])
        .arg(out)
        .output()
        .expect("brigade runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (json::read(&out.join("report.json")).unwrap(), stdout)
}

/// Checks what every compare report must show, whatever the store.
/// The result of a run that finished (a failed run fails the test with its error).
fn finished(run: &RunRecord) -> &LoadResult {
    run.result
        .as_ref()
        .unwrap_or_else(|| panic!("{} failed: {:?}", run.runtime, run.error))
}

/// Checks that `run` finished with traffic and without an error.
fn clean(run: &RunRecord) {
    let result = finished(run);
    assert!(result.total.requests > 0);
    assert_eq!(result.total.errors.total(), 0, "{:?}", result.total.errors);
}

fn check_report(report: &Report, out: &Path, check: &str, stdout: &str) {
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();

    // Every run had a server of its own, started for it and stopped cleanly after it.
    assert_eq!(report.servers.len(), report.runs.len(), "{stdout}");
    let pids: BTreeSet<u32> = report
        .runs
        .iter()
        .map(|r| r.reset.as_ref().expect("a reset record").pid)
        .collect();
    assert_eq!(pids.len(), report.runs.len(), "a fresh process per run");
    for server in &report.servers {
        let stop = server.stop.as_ref().expect("stopped");
        assert_eq!(
            stop.to_string(),
            "stopped on SIGTERM, exit 0",
            "{}",
            server.runtime
        );
        assert!(
            !Path::new(&format!("/proc/{}", server.pid)).exists(),
            "server process left behind"
        );
    }
    assert!(report.state.how.contains("server process of its own"));

    let mut server_cpu_s = 0.0;
    for run in &report.runs {
        let reset = run.reset.as_ref().unwrap();
        // The preloaded counts, as the server (or the folder's preparing server) reported them.
        if run.preload == 200 {
            let held: Vec<u64> = ["waiters", "tables", "orders"]
                .iter()
                .map(|c| reset.preloaded.get(*c).copied().unwrap_or(0))
                .collect();
            assert_eq!(held, [200, 200, 200], "{reset:?}");
        } else {
            assert!(reset.preloaded.is_empty(), "{reset:?}");
        }
        // The fixtures see the preload: reading the 200th waiter works with it, fails without.
        if run.scenario == check {
            match run.preload {
                200 => assert!(run.result.is_some(), "{}: {:?}", run.runtime, run.error),
                _ => assert!(
                    run.error
                        .as_deref()
                        .is_some_and(|e| e.contains("nothing at /items/0/id")),
                    "{:?}",
                    run.error
                ),
            }
            continue;
        }
        let result = finished(run);
        let total = &result.total;
        // Real traffic, but no speed goal: a debug build on a busy 2-core machine can be slow.
        assert!(
            total.requests > 0,
            "{}: {} requests",
            run.runtime,
            total.requests
        );
        let implied = total.hits_per_s * result.elapsed_s;
        assert!((implied - total.requests as f64).abs() / (total.requests as f64) < 0.01);
        assert!(
            (result.elapsed_s - 1.0).abs() < 0.5,
            "measured {} s",
            result.elapsed_s
        );
        assert!(
            total.errors.total() * 100 <= total.requests,
            "{:?}",
            total.errors
        );
        // The server was sampled; its CPU counter moves in 10 ms ticks, so a run starved by a
        // busy machine may show none: CPU is asserted over all runs below.
        assert!(run.server.peak_rss_mib > 1.0, "{:?}", run.server);
        assert!(run.server_cpu_us_per_request().is_some());
        server_cpu_s += run.server.cpu_percent / 100.0 * result.elapsed_s;
    }
    assert!(server_cpu_s > 0.0, "no server CPU measured in any run");

    // The table: one row per runtime, users and preload, its numbers the JSON's, with the CPU
    // per request column filled.
    for row in report.rows.iter().filter(|r| r.runs > 0) {
        assert!(row.server_cpu_us_per_request >= 0.0, "{row:?}");
        let line = md
            .lines()
            .find(|l| {
                l.starts_with(&format!(
                    "| {} | {} | {} |",
                    row.runtime, row.users, row.preload
                )) && l.contains(&format!("| {} |", row.requests))
            })
            .unwrap_or_else(|| panic!("no markdown row for {row:?}"));
        assert!(
            line.contains(&format!("| {:.1} |", row.hits_per_s)),
            "{line}"
        );
        assert!(
            line.contains(&format!("| {:.1} |", row.server_cpu_us_per_request)),
            "{line}"
        );
    }
    assert!(md.contains(&brigade_report::render::TABLE_HEADER.join(" | ")));
    assert!(md.contains("server CPU µs/req"));

    // A throughput verdict for every cell and scenario; an efficiency verdict where the cells were
    // measured side by side (these tests leave that out unless it is their subject).
    assert_eq!(report.cells.len(), 2 * 2);
    let side = !report.side_by_side.is_empty();
    assert!(report.cells.iter().all(|c| c.efficiency.is_some() == side));
    assert!(report
        .scenarios
        .iter()
        .all(|s| s.efficiency.is_some() == side));
    assert!(md.contains("| scenario | throughput verdict | why | efficiency verdict | why |"));
    for v in &report.scenarios {
        assert!(md.contains(&format!("throughput **{}**", v.verdict.label())));
    }

    assert!(html.contains("<svg") && html.contains("throughput against preload"));
    assert!(stdout.contains("# Brigade runtime comparison"), "{stdout}");
}

#[test]
fn compare_runs_every_run_on_a_fresh_server_with_the_preload_visible_to_its_fixtures() {
    let dir = tempfile::tempdir().unwrap();
    let check = dir.path().join("preloaded.toml");
    std::fs::write(&check, PRELOADED_CHECK).unwrap();
    let check = check.to_str().unwrap();
    let scenarios = format!("waiter,{check}");
    let common = [
        "--runtimes",
        "axum,hyper",
        "--scenarios",
        &scenarios,
        "--users",
        "4",
        "--preload",
        "0,200",
        "--duration",
        "1s",
        "--warmup",
        "300ms",
    ];

    // Memory: a fresh process per run, filling itself at start-up; two repeats for paired leads.
    let out = dir.path().join("memory");
    let mut args = common.to_vec();
    args.extend(["--store", "memory", "--repeat", "2"]);
    let (report, stdout) = compare(&out, &args);
    assert_eq!(report.runs.len(), 2 * 2 * 2 * 2);
    // A scenario file is reported under the name it declares.
    check_report(&report, &out, "preloaded", &stdout);
    for run in report.runs.iter().filter(|r| r.preload == 200) {
        let reset = run.reset.as_ref().unwrap();
        assert!(
            reset.how.contains("fresh process, filled with 200"),
            "{}",
            reset.how
        );
        assert!(reset.preload_s.is_some());
    }
    // The runs of a cell are back to back and the order rotates from cell to cell.
    let firsts: Vec<&str> = report
        .runs
        .chunks(2)
        .map(|c| c[0].runtime.as_str())
        .collect();
    assert_eq!(&firsts[..3], ["axum", "hyper", "axum"]);
    // The verdict line shows the numbers its percentage comes from. Judged without the busy-
    // machine flags (the figures themselves are real), every cell compares two paired repeats.
    let mut runs = report.runs.clone();
    for run in &mut runs {
        run.contended = None;
        run.generator_bound = None;
    }
    let evidence = brigade_compare::judge::Evidence {
        runs: &runs,
        side: &[],
        searches: &[],
        settings: &report.settings,
    };
    let judged = brigade_compare::judge(&evidence, &brigade_report::verdict::Rule::default())
        .expect("judged");
    for cell in judged.cells.iter().filter(|c| c.scenario == "waiter") {
        let verdict = &cell.verdict;
        assert!(
            matches!(
                verdict.outcome,
                Outcome::Winner { .. }
                    | Outcome::Leads { .. }
                    | Outcome::Equivalent { .. }
                    | Outcome::Undecided { .. }
            ),
            "{verdict:?}"
        );
        // Throughput is judged from the two runs (the samples), not their seconds.
        assert!(
            verdict.reason.contains("2 isolated runs each)")
                && verdict.reason.contains("% simultaneous CI "),
            "{}",
            verdict.reason
        );
        // Without side-by-side windows there is no efficiency verdict.
        assert!(cell.efficiency.is_none());
    }

    // Embedded: a fresh folder per run, a copy of one prepared once for the preload.
    let out = dir.path().join("embedded");
    let mut args = common.to_vec();
    args.extend(["--store", "embedded", "--repeat", "1"]);
    let (report, stdout) = compare(&out, &args);
    assert_eq!(report.runs.len(), 2 * 2 * 2);
    // A scenario file is reported under the name it declares.
    check_report(&report, &out, "preloaded", &stdout);
    assert_eq!(report.state.prepared.len(), 1);
    assert!(report.state.prepared[0].preload == 200 && report.state.prepared[0].bytes > 0);
    for run in &report.runs {
        let reset = run.reset.as_ref().unwrap();
        match run.preload {
            200 => assert!(reset
                .how
                .starts_with("copy of the folder prepared with 200")),
            _ => assert_eq!(reset.how, "fresh data folder"),
        }
    }
}

/// A scenario on the bench endpoints only, naming no service: it goes to the first service the
/// server announces, whatever its name.
const BENCH_ONLY: &str = r#"
name = "bench-only"
description = "The bench endpoints, on whichever service the server announces first."

[[request]]
name = "GET /bench/hello"
weight = 3
path = "/bench/hello"

[[request]]
name = "POST /bench/strings/reverse"
method = "POST"
path = "/bench/strings/reverse"
body = '["{{random_string 8}}", "b", "c"]'
"#;

/// A server that is not the restaurant's three services: one service, started by a command
/// template; compare learns its name from the announcement.
const ONE_SERVICE: &str = "{binary} serve --runtime {runtime} --service waiter --listen {listen} \
    --store {store} --data-dir {data_dir} --workers {workers}";

#[test]
fn compare_learns_the_services_from_a_command_template_and_refuses_scenarios_for_others() {
    let dir = tempfile::tempdir().unwrap();
    let bench = dir.path().join("bench-only.toml");
    std::fs::write(&bench, BENCH_ONLY).unwrap();
    let out = dir.path().join("one");
    let (report, stdout) = compare(
        &out,
        &[
            "--runtimes",
            "axum,hyper",
            "--server-command",
            ONE_SERVICE,
            "--scenarios",
            bench.to_str().unwrap(),
            "--quick",
            "--users",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--store",
            "memory",
        ],
    );
    assert_eq!(report.settings.services, ["waiter"], "{stdout}");
    assert_eq!(report.settings.server_command, ONE_SERVICE);
    assert_eq!(report.runs.len(), 2);
    for run in &report.runs {
        clean(run);
    }
    for server in &report.servers {
        assert_eq!(server.urls.keys().collect::<Vec<_>>(), ["waiter"]);
        assert_eq!(
            server.stop.as_ref().unwrap().to_string(),
            "stopped on SIGTERM, exit 0"
        );
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains(
            "- Server: services waiter (as the server announced them); started as `{binary} serve"
        ),
        "{md}"
    );

    // The restaurant's `tables` scenario talks to a service this server does not announce.
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args([
            "compare",
            "--runtimes",
            "axum",
            "--server-command",
            ONE_SERVICE,
        ])
        .args(["--scenarios", "tables", "--users", "1", "--repeat", "1"])
        .args(["--duration", "300ms", "--warmup", "0s", "--store", "memory"])
        .arg("--no-progress")
        .arg("--out")
        .arg(dir.path().join("refused"))
        .output()
        .expect("brigade runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(
            "scenario tables talks to \"tables\", which the server does not announce (it serves: \
             waiter)"
        ),
        "{stderr}"
    );
}

#[test]
fn load_knows_the_scenarios_and_targets_the_binary_registered() {
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args(["load", "--list-scenarios"])
        .output()
        .expect("brigade runs");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let names: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.starts_with("target "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        names,
        [
            "hello",
            "bytes",
            "strings",
            "static",
            "waiter",
            "tables",
            "kitchen",
            "all",
            "read-heavy"
        ]
    );
    assert!(
        stdout.contains("target waiter=http://127.0.0.1:8081"),
        "{stdout}"
    );
    assert!(
        stdout.contains("target kitchen=http://127.0.0.1:8083"),
        "{stdout}"
    );
}

/// A `brigade serve` child and the lines it printed before it listened.
struct Served {
    child: Child,
    lines: Vec<String>,
}

impl Served {
    fn start(store: &str, data: &Path, preload: u64) -> Served {
        Served::start_on("axum", store, data, preload)
    }

    fn start_on(runtime: &str, store: &str, data: &Path, preload: u64) -> Served {
        Served::start_pinned(runtime, store, data, preload, None)
    }

    /// A server as [`Served::start_on`] starts it, restricted to `cpus` when given.
    fn start_pinned(
        runtime: &str,
        store: &str,
        data: &Path,
        preload: u64,
        cpus: Option<&[usize]>,
    ) -> Served {
        let mut command = Command::new(env!("CARGO_BIN_EXE_brigade"));
        command
            .args([
                "serve",
                "--runtime",
                runtime,
                "--listen",
                "127.0.0.1:0",
                "--workers",
                "1",
            ])
            .args(["--store", store, "--preload", &preload.to_string()])
            .arg("--data-dir")
            .arg(data)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped());
        let mut child = spawn_pinned(&mut command, cpus).expect("brigade starts");
        let mut reader = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut lines = Vec::new();
        while lines
            .iter()
            .filter(|l: &&String| Listening::parse(l).is_some())
            .count()
            < 3
        {
            lines.push(reader.next().expect("a line").unwrap());
        }
        Served { child, lines }
    }

    fn url(&self, service: &str) -> String {
        self.lines
            .iter()
            .filter_map(|l| Listening::parse(l))
            .find(|l| l.service == service)
            .unwrap()
            .url
    }

    /// The `preloaded` announcements: (documents, existing) per collection.
    fn preloaded(&self) -> Vec<(u64, u64)> {
        self.lines
            .iter()
            .filter_map(|l| Preloaded::parse(l))
            .map(|p| (p.documents, p.existing))
            .collect()
    }

    /// The `total` of each service's list.
    fn totals(&self, rt: &tokio::runtime::Runtime) -> Vec<u64> {
        let c = TestClient::default();
        [
            ("waiter", "waiters"),
            ("tables", "tables"),
            ("kitchen", "orders"),
        ]
        .iter()
        .map(|(service, path)| {
            let url = format!("{}/{path}?limit=1", self.url(service));
            rt.block_on(c.get(&url)).expect(200, &url).json["total"]
                .as_u64()
                .unwrap()
        })
        .collect()
    }

    fn stop(mut self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_preload_fills_every_service_once_and_a_restart_does_not_double_it() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let data = tempfile::tempdir().unwrap();

    let first = Served::start("embedded", data.path(), 120);
    assert_eq!(first.totals(&rt), [120, 120, 120]);
    assert_eq!(first.preloaded(), [(120, 0); 3], "{:?}", first.lines);
    // The preload comes before the listening lines: a client that waits for them sees it whole.
    let listening = first
        .lines
        .iter()
        .position(|l| Listening::parse(l).is_some())
        .unwrap();
    assert!(
        first.lines[..listening]
            .iter()
            .filter(|l| Preloaded::parse(l).is_some())
            .count()
            == 3
    );
    first.stop();

    let again = Served::start("embedded", data.path(), 120);
    assert_eq!(again.totals(&rt), [120, 120, 120], "not doubled");
    assert_eq!(again.preloaded(), [(0, 120); 3], "{:?}", again.lines);
    again.stop();

    let memory = Served::start("memory", data.path(), 30);
    assert_eq!(memory.totals(&rt), [30, 30, 30]);
    memory.stop();
}

/// `compare --external` on servers the test started itself (as a container or another machine
/// would run them): axum serving all three services from one process (its three URLs counted as
/// one process by their `/metrics` start time), hyper serving the waiter alone. Both runtimes are
/// loaded and judged, their server CPU and memory come from `/metrics` (and the report says so),
/// the state is said to be as found, compare leaves the servers running, and a server listed
/// under a runtime it does not serve is refused before anything runs.
#[test]
fn compare_external_loads_servers_it_did_not_start_and_reads_their_cpu_from_metrics() {
    let data = tempfile::tempdir().unwrap();
    let axum = Served::start_on("axum", "memory", data.path(), 0);
    let hyper = Served::start_on("hyper", "memory", data.path(), 0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("external");
    let axum_specs: Vec<String> = ["waiter", "tables", "kitchen"]
        .iter()
        .map(|s| format!("axum:{s}={}", axum.url(s)))
        .collect();
    let hyper_spec = format!("hyper:waiter={}", hyper.url("waiter"));
    let mut args: Vec<&str> = Vec::new();
    for spec in axum_specs.iter().chain([&hyper_spec]) {
        args.extend(["--external", spec.as_str()]);
    }
    args.extend([
        "--scenarios",
        "waiter",
        "--users",
        "2",
        "--repeat",
        "2",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--setup-note",
        "Containers=none (servers started by the test)",
    ]);
    let (report, stdout) = compare(&out, &args);
    assert_eq!(report.settings.runtimes, ["axum", "hyper"], "{stdout}");
    assert_eq!(report.settings.store, "memory", "the store as /health says");
    assert_eq!(report.runs.len(), 4);
    for run in &report.runs {
        clean(run);
        // CPU from the servers' /metrics: a loaded server used some.
        assert!(run.server.cpu_percent > 0.0, "{run:?}");
        assert!(run.server.peak_rss_mib > 1.0, "{run:?}");
        assert!(run.server_cpu_us_per_request().is_some());
        assert!(run.reset.as_ref().unwrap().how.starts_with("as found"));
    }
    assert_eq!(report.servers.len(), 4);
    for server in &report.servers {
        let source = server.source.as_deref().unwrap();
        // axum's three URLs are one process; hyper's one URL is one.
        assert!(source.contains("(1 process(es), summed)"), "{source}");
        assert!(server.stop.is_none(), "compare stops no external server");
    }
    assert!(
        report.state.how.contains("not restarted"),
        "{}",
        report.state.how
    );
    assert!(report.settings.server_command.contains("--external"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("- Containers: none (servers started by the test)"),
        "{md}"
    );
    assert!(md.contains("- Server figures, axum: /metrics"), "{md}");
    // Nothing claims compare restarted, sized or pinned servers it did not start.
    assert!(
        md.contains("the same servers for every run (--external)"),
        "{md}"
    );
    assert!(md.contains("- Threads: the servers' own"), "{md}");
    assert!(!md.contains("a fresh server per run"), "{md}");
    assert!(!md.contains("worker(s)"), "{md}");
    // One verdict per scenario, as compare always gives.
    assert_eq!(report.scenarios.len(), 1);

    // The servers still run: compare stopped nothing.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(axum.totals(&rt).len(), 3);

    // Listed under the wrong runtime: refused before any run, naming what it serves.
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args(["compare", "--external"])
        .arg(format!("actix:waiter={}", axum.url("waiter")))
        .args(["--scenarios", "waiter", "--users", "1", "--no-progress"])
        .arg("--out")
        .arg(dir.path().join("refused"))
        .output()
        .expect("brigade runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("serves with axum, not actix"), "{stderr}");
    // --preload means nothing to a server compare does not start.
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args(["compare", "--external", &hyper_spec, "--preload", "10"])
        .output()
        .expect("brigade runs");
    assert!(!output.status.success());
    axum.stop();
    hyper.stop();
}

/// `brigade study storage --quick` with the real binary, through the store and through HTTP (the
/// restaurant's registered growth: kitchen orders grown by appending items, on a `brigade serve` the
/// study starts and stops): the three reports, both ways in with the counts asked, every document
/// read back checked. The library's own test covers every store and phase in detail (and mongo when
/// `MONGODB_URI` is set).
#[test]
fn study_storage_quick_through_the_store_and_http_writes_the_general_report() {
    use brigade_report::study::StudyReport;
    use brigade_studies::tables::{GROUPS_TABLE, PHASES_TABLE};
    use brigade_studies::StorageCounts as Counts;

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

/// Runs `brigade study <args>` into a fresh folder and returns its report (read back from
/// report.json) and stdout; the markdown and the HTML must be there too.
fn study(args: &[&str]) -> (brigade_report::study::StudyReport, String) {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .arg("study")
        .args(args)
        .arg("--out")
        .arg(out.path())
        .output()
        .expect("brigade runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "study {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let report: brigade_report::study::StudyReport =
        json::read_as(&out.path().join("report.json")).unwrap();
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(md.starts_with(&format!("# {}", report.title)) && md.contains("## Setup"));
    assert!(html.contains("<svg"), "the HTML has its charts");
    for label in ["Threads", "CPUs", "Settings", "Interleaving"] {
        assert!(
            report.setup.lines.iter().any(|l| l.label == label),
            "the setup says {label}: {:?}",
            report.setup.lines
        );
    }
    (report, stdout)
}

/// Every row of an every-run table is internally consistent: requests = hits/s × measured
/// seconds within 2%, and bytes/s at least what the bytes received per request account for.
fn check_runs(table: &brigade_report::study::Table, expected_rows: usize) {
    assert_eq!(table.rows.len(), expected_rows, "{:?}", table.rows);
    let m = |name: &str| table.metric(name).unwrap();
    let (requests, seconds, hits, bytes, received) = (
        m("requests"),
        m("seconds"),
        m("hits/s"),
        m("bytes/s"),
        m("received per request"),
    );
    for row in &table.rows {
        let v = |i: usize| row.values[i].unwrap_or_else(|| panic!("{row:?} has no value {i}"));
        assert!(v(requests) > 0.0, "{row:?}");
        let counted = v(hits) * v(seconds);
        assert!(
            (counted - v(requests)).abs() <= 0.02 * v(requests),
            "requests {} but hits/s × seconds = {counted}: {row:?}",
            v(requests)
        );
        assert!(
            v(bytes) >= 0.98 * v(hits) * v(received),
            "bytes/s below what was received: {row:?}"
        );
    }
}

/// `brigade study rpc` in a tiny configuration on two runtimes and in process: every operation ×
/// client count × provider present, every run consistent, the byte operations' bodies counted.
#[test]
fn study_rpc_tiny_on_two_runtimes_and_in_process() {
    use brigade_studies::tables::{OPERATIONS_TABLE, RPC_RUNS_TABLE as RUNS_TABLE};
    let (report, stdout) = study(&[
        "rpc",
        "--runtimes",
        "hyper,axum",
        "--clients",
        "1,2",
        "--iterations",
        "5",
        "--bytes",
        "3000",
        "--strings",
        "40",
        "--warmup",
        "50ms",
        "--repeat",
        "1",
    ]);
    assert!(stdout.contains("# Brigade RPC payload study"), "{stdout}");
    let ops = report.table(OPERATIONS_TABLE).unwrap();
    let operations = [
        "sayHello",
        "send 3000 bytes",
        "get 3000 bytes",
        "send 40 strings",
        "send and get 40 strings reversed",
    ];
    for op in operations {
        for clients in ["1", "2"] {
            for provider in ["hyper", "axum", "inproc"] {
                let at = [
                    ("operation", op),
                    ("clients", clients),
                    ("provider", provider),
                ];
                let calls = ops.value(&at, "calls");
                assert_eq!(calls, Some(5.0 * clients.parse::<f64>().unwrap()), "{at:?}");
                assert!(ops.value(&at, "mean").is_some_and(|m| m > 0.0), "{at:?}");
                // The shared work is the in-process figure, the same for every provider.
                assert_eq!(
                    ops.value(&at, "shared work"),
                    ops.value(
                        &[
                            ("operation", op),
                            ("clients", clients),
                            ("provider", "inproc")
                        ],
                        "mean"
                    )
                );
            }
        }
    }
    let runs = report.table(RUNS_TABLE).unwrap();
    check_runs(runs, operations.len() * 2 * 3);
    let received = runs.metric("received per request").unwrap();
    for row in runs.rows_at(&[("operation", "get 3000 bytes")]) {
        assert!(row.values[received].unwrap() >= 3000.0, "{row:?}");
    }
}

/// `brigade study sweep` in a tiny configuration on two runtimes: every step on both, with and
/// without keep-alive; the bad URL answered 404 with the JSON error body (and counted as
/// answered in its step); bytes per request at least the body; the probe answered; memory read.
#[test]
fn study_sweep_tiny_on_two_runtimes() {
    use brigade_studies::tables::{
        BAD_URL_TABLE, CLIENTS_TABLE, MEMORY_TABLE, PEAKS_TABLE, SIZES_TABLE,
        SWEEP_RUNS_TABLE as RUNS_TABLE,
    };
    let (report, _) = study(&[
        "sweep",
        "--runtimes",
        "hyper,axum",
        "--clients",
        "1,4",
        "--sizes",
        "256,4096",
        "--size-clients",
        "2",
        "--duration",
        "400ms",
        "--warmup",
        "50ms",
        "--settle",
        "200ms",
        // --quick for the TLS handshake steps' defaults (2 clients).
        "--quick",
    ]);
    check_handshakes(&report);
    let runs = report.table(RUNS_TABLE).unwrap();
    // Clients 1 and 4 with and without keep-alive, sizes 256 and 4096, the bad URL: 7 steps.
    check_runs(runs, 7 * 2);
    let (received, probes, errors) = (
        runs.metric("received per request").unwrap(),
        runs.metric("probe answers").unwrap(),
        runs.metric("errors").unwrap(),
    );
    for row in &runs.rows {
        assert_eq!(row.values[errors], Some(0.0), "{row:?}");
        assert!(row.values[probes].is_some_and(|n| n >= 1.0), "{row:?}");
    }
    for (body, size) in [("256 B", 256.0), ("4 KiB", 4096.0), ("2 KiB", 2048.0)] {
        for row in runs.rows_at(&[("body", body)]) {
            let per_request = row.values[received].unwrap();
            assert!(
                per_request >= size && per_request < size + 1024.0,
                "{body}: {per_request} bytes per request: {row:?}"
            );
        }
    }
    let clients = report.table(CLIENTS_TABLE).unwrap();
    for runtime in ["hyper", "axum"] {
        for keepalive in ["on", "off"] {
            for n in ["1", "4"] {
                let at = [
                    ("runtime", runtime),
                    ("keep-alive", keepalive),
                    ("clients", n),
                ];
                assert!(
                    clients.value(&at, "hits/s").is_some_and(|h| h > 0.0),
                    "{at:?}"
                );
            }
            let peak = report.table(PEAKS_TABLE).unwrap();
            let at = [("runtime", runtime), ("keep-alive", keepalive)];
            assert!(
                matches!(peak.value(&at, "at clients"), Some(n) if n == 1.0 || n == 4.0),
                "{at:?}"
            );
        }
        let bad = report.table(BAD_URL_TABLE).unwrap();
        assert_eq!(
            bad.value(
                &[("runtime", runtime), ("error code", "not_found")],
                "status"
            ),
            Some(404.0)
        );
        let sizes = report.table(SIZES_TABLE).unwrap();
        assert!(sizes
            .value(&[("runtime", runtime), ("body", "bad URL (404)")], "hits/s")
            .is_some_and(|h| h > 0.0));
        let memory = report.table(MEMORY_TABLE).unwrap();
        let row = memory.rows_at(&[("runtime", runtime)]);
        assert_eq!(row.len(), 1);
        let before = row[0].values[memory.metric("before").unwrap()].unwrap();
        let peak = row[0].values[memory.metric("peak").unwrap()].unwrap();
        assert!(before > 0.0 && peak >= before, "{row:?}");
    }
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("at 4 clients without keep-alive: the generator used")),
        "{:?}",
        report.notes
    );
}

/// The sweep's TLS handshakes table: on both runtimes (both offer h3) and over both protocols,
/// resumption off makes only full handshakes and resumption on resumed ones, each with its CPU
/// per handshake.
fn check_handshakes(report: &brigade_report::study::StudyReport) {
    use brigade_studies::tables::HANDSHAKES_TABLE;
    let table = report
        .table(HANDSHAKES_TABLE)
        .expect("the TLS handshakes table");
    assert_eq!(table.rows.len(), 2 * 2 * 2, "{:?}", table.rows);
    for runtime in ["hyper", "axum"] {
        for protocol in ["h1-tls", "h3"] {
            let off = [
                ("runtime", runtime),
                ("protocol", protocol),
                ("resumption", "off"),
            ];
            let on = [
                ("runtime", runtime),
                ("protocol", protocol),
                ("resumption", "on"),
            ];
            assert!(
                table.value(&off, "full handshakes").unwrap() > 0.0,
                "{off:?}"
            );
            assert_eq!(
                table.value(&off, "resumed handshakes"),
                Some(0.0),
                "{off:?}"
            );
            assert!(
                table.value(&on, "resumed handshakes").unwrap() > 0.0,
                "{on:?}"
            );
            for at in [off, on] {
                assert!(table.value(&at, "handshakes/s").unwrap() > 0.0, "{at:?}");
                assert!(table.value(&at, "server CPU per handshake").unwrap() > 0.0);
            }
        }
    }
}

/// `brigade study inproc` in a tiny configuration on two runtimes: the loopback answers equal the
/// in-process ones byte for byte (checked by the study before timing), every operation × clients
/// × provider measured, every run consistent.
#[test]
fn study_inproc_tiny_answers_alike_in_process_and_over_loopback() {
    use brigade_studies::tables::{
        ADVANTAGE_TABLE, ANSWERS_TABLE, CALLS_TABLE, INPROC_RUNS_TABLE as RUNS_TABLE,
    };
    let (report, _) = study(&[
        "inproc",
        "--runtimes",
        "hyper,axum",
        "--calls",
        "30",
        "--strings",
        "20",
        "--warmup",
        "20ms",
        "--repeat",
        "1",
    ]);
    let answers = report.table(ANSWERS_TABLE).unwrap();
    for runtime in ["hyper", "axum"] {
        for (request, status) in [
            ("POST /bench/strings/reverse", 200.0),
            ("GET /bench/hello", 200.0),
            ("GET /bench/static/256", 200.0),
            ("GET /bench/no-such-route", 404.0),
        ] {
            assert_eq!(
                answers.value(&[("runtime", runtime), ("request", request)], "status"),
                Some(status),
                "{runtime} {request}"
            );
        }
    }
    assert!(report
        .notes
        .iter()
        .any(|n| n.contains("8 loopback answers were compared")));
    let calls = report.table(CALLS_TABLE).unwrap();
    let advantage = report.table(ADVANTAGE_TABLE).unwrap();
    for op in ["typed: reverse 20 strings", "GET /bench/hello"] {
        for clients in ["1", "2"] {
            for provider in ["inproc", "hyper", "axum"] {
                let at = [
                    ("operation", op),
                    ("clients", clients),
                    ("provider", provider),
                ];
                assert_eq!(
                    calls.value(&at, "calls"),
                    Some(30.0 * clients.parse::<f64>().unwrap()),
                    "{at:?}"
                );
            }
            for runtime in ["hyper", "axum"] {
                let at = [
                    ("operation", op),
                    ("clients", clients),
                    ("runtime", runtime),
                ];
                assert!(
                    advantage.value(&at, "in-process advantage").is_some(),
                    "{at:?}"
                );
            }
        }
    }
    check_runs(report.table(RUNS_TABLE).unwrap(), 2 * 2 * 3);
}

#[test]
fn compare_offers_one_open_loop_load_without_keepalive_to_every_runtime_and_gates_on_thresholds_and_a_baseline(
) {
    let _alone = crate::measuring::alone();
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let args = [
        "--runtimes",
        "axum,hyper",
        "--server-command",
        ONE_SERVICE,
        "--scenarios",
        "strings",
        "--users",
        "2",
        "--rate",
        "40",
        "--no-keepalive",
        "--repeat",
        "1",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--store",
        "memory",
        "--seed",
        "42",
        "--threshold",
        "errors<1%",
        "--no-side-by-side",
    ];
    let (report, stdout) = compare(&first, &args);
    let s = &report.settings;
    assert_eq!((s.keepalive, s.rate, s.seed), (false, Some(40.0), Some(42)));
    assert_eq!(report.runs.len(), 2, "{stdout}");
    for run in &report.runs {
        let result = finished(run);
        let settings = &result.settings;
        assert_eq!(
            (settings.keepalive, settings.rate, settings.seed),
            (false, Some(40.0), Some(42))
        );
        // The open-loop schedule: exactly rate × duration sends, each on its own connection.
        assert_eq!(result.total.requests, 40, "{:?}", result.total);
        assert_eq!(result.total.errors.total(), 0, "{:?}", result.total.errors);
    }
    assert_eq!(report.threshold_checks.len(), 2);
    let md = std::fs::read_to_string(first.join("report.md")).unwrap();
    assert!(
        md.contains("open loop at 40 requests/s, a new connection per request"),
        "{md}"
    );
    assert!(md.contains("generator seed 42 (every run)"), "{md}");
    assert!(md.contains("All 2 checks held."), "{md}");

    // Again, against the first as a baseline, with a threshold no run can hold.
    let second = dir.path().join("second");
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .arg("compare")
        .args(args)
        .args(["--threshold", "p50<1us", "--baseline"])
        .arg(first.join("report.json"))
        .args(["--no-progress", "--out"])
        .arg(&second)
        .output()
        .expect("brigade runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "a failed threshold fails the command"
    );
    assert!(
        stderr.contains("2 of 4 threshold check(s) failed") && stderr.contains("p50<1us failed"),
        "{stderr}"
    );
    let report = json::read(&second.join("report.json")).unwrap();
    let baseline = report.baseline.expect("the baseline section");
    // One comparison (hyper and axum on throughput), found in both; one second of each runtime
    // gives no interval, so the change is not judged.
    assert_eq!(baseline.cells.len(), 1, "{baseline:?}");
    assert!(baseline.missing.is_empty(), "{:?}", baseline.missing);
    assert_eq!(
        baseline.cells[0].call,
        brigade_report::baseline::Call::NotJudged
    );
    let md = std::fs::read_to_string(second.join("report.md")).unwrap();
    assert!(md.contains("## Against the baseline") && md.contains("**2 of 4 checks failed:**"));
    assert!(
        baseline.basis.starts_with("Against one earlier run"),
        "{baseline:?}"
    );

    // Re-judged against two earlier runs (a CI job's saved reports), nothing run: the section is
    // rewritten and the gate answers again (its thresholds still fail).
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args(["compare", "--fail-on-regression", "--rejudge"])
        .arg(&second)
        .arg("--baseline")
        .arg(&first)
        .arg("--baseline")
        .arg(first.join("report.json"))
        .output()
        .expect("brigade runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("2 of 4 threshold check(s) failed"),
        "{stderr}"
    );
    let baseline = json::read(&second.join("report.json"))
        .unwrap()
        .baseline
        .expect("the baseline section");
    assert!(
        baseline.basis.starts_with("Against 2 earlier runs"),
        "{baseline:?}"
    );
    assert_eq!(baseline.cells.len(), 1, "{baseline:?}");
}

#[test]
fn load_runs_the_bench_scenarios_on_any_service_and_fails_on_a_threshold_it_names() {
    let data = tempfile::tempdir().unwrap();
    let served = Served::start("memory", data.path(), 0);
    let url = served.url("tables");
    let json_path = data.path().join("static.json");
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args([
            "load",
            "--target",
            &url,
            "--scenario",
            "static",
            "--users",
            "2",
        ])
        .args([
            "--requests",
            "60",
            "--warmup",
            "0s",
            "--no-progress",
            "--seed",
            "9",
        ])
        .args([
            "--threshold",
            "errors<1%",
            "--threshold",
            "p50<1us",
            "--json",
        ])
        .arg(&json_path)
        .output()
        .expect("brigade runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}");
    assert!(stdout.contains("threshold ok   errors<1%"), "{stdout}");
    assert!(stdout.contains("threshold FAIL p50<1us"), "{stdout}");
    assert!(
        stderr.contains("1 of 2 threshold(s) failed: p50<1us (p50 = "),
        "{stderr}"
    );
    assert!(stdout.contains("seed: 9"), "{stdout}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(result["total"]["requests"], 60);
    assert_eq!(result["total"]["ok"], 60);
    // Every size's route carries at least its body per request.
    for route in result["routes"].as_array().unwrap() {
        let size: u64 = route["name"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let requests = route["requests"].as_u64().unwrap();
        let received = route["bytes_received"].as_u64().unwrap();
        assert!(
            received >= size * requests && received < (size + 400) * requests,
            "{route}"
        );
    }

    // The payload scenarios, a connection per request.
    for scenario in ["bytes", "strings"] {
        let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
            .args(["load", "--target", &url, "--scenario", scenario])
            .args(["--users", "2", "--requests", "20", "--warmup", "0s"])
            .args([
                "--no-progress",
                "--no-keepalive",
                "--threshold",
                "errors<=0",
            ])
            .output()
            .expect("brigade runs");
        assert!(
            output.status.success(),
            "{scenario}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    served.stop();
}

#[test]
fn compare_side_by_side_finds_a_planted_cost_and_no_difference_between_a_runtime_and_itself() {
    let _alone = crate::measuring::alone();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("side");
    // Three hyper servers at once: hyper#2 is hyper again (A/A), hyper#3 burns an extra 1 ms per
    // request — far beyond anything a debug build's noise could hide.
    let (report, stdout) = compare(
        &out,
        &[
            "--runtimes",
            "hyper,hyper,hyper",
            "--handicap",
            "hyper#3=1000",
            "--no-isolated",
            // A light load: the debug build and the other tests of this binary share the CPUs.
            "--side-by-side-rates",
            "60",
            "--rounds",
            "3",
            "--windows",
            "4",
            "--count-seconds",
            "3",
            "--budget",
            "0s",
            "--scenarios",
            "waiter",
            "--users",
            "2",
            "--store",
            "memory",
        ],
    );
    assert_eq!(report.settings.runtimes, ["hyper", "hyper#2", "hyper#3"]);
    assert!(report.runs.is_empty(), "no isolated runs asked for");
    assert_eq!(report.side_by_side.len(), 1, "{stdout}");
    let level = &report.side_by_side[0];
    assert_eq!(level.not_judged, None, "{stdout}");
    assert_eq!(level.runtimes.len(), 3);
    // Three rounds of four windows, each round on fresh servers.
    assert_eq!(level.round_windows, [4, 4, 4]);
    for r in &level.runtimes {
        assert_eq!(r.window_cpu_ns.len(), 12);
        assert!(r.window_cpu_ns.iter().all(|&ns| ns > 0), "{r:?}");
        assert!(r.requests >= 12 * 59, "{r:?}");
    }
    let find = |name: &str| level.runtimes.iter().find(|r| r.runtime == name).unwrap();
    assert_eq!(find("hyper#3").handicap_us, Some(1000.0));
    // Every server is its own process, each with its own data: three servers in each of three
    // rounds were started.
    let pids: BTreeSet<u32> = report.servers.iter().map(|s| s.pid).collect();
    assert_eq!(pids.len(), 9);
    let efficiency = |b: &str| {
        report
            .comparisons
            .iter()
            .find(|c| c.measure == brigade_report::verdict::Measure::Efficiency && c.b == b)
    };
    // The handicapped copy loses, by roughly what was planted.
    let handicapped = efficiency("hyper#3").expect("hyper#3 is compared");
    assert_ne!(handicapped.a, "hyper#3");
    assert_eq!(
        handicapped.outcome,
        brigade_stats::Outcome::Win,
        "{handicapped:?}"
    );
    assert!(handicapped.ratio.unwrap() > 1.3, "{handicapped:?}");
    // Its interval rests on the rounds and holds together with the cell's other comparison.
    assert!(
        handicapped.simultaneous && handicapped.samples == 3,
        "{handicapped:?}"
    );
    // The A/A pair (the best of the two against the other): no win, and an estimate near 1 —
    // a false difference of even 5% fails here.
    let aa = report
        .comparisons
        .iter()
        .find(|c| {
            let pair = [c.a.as_str(), c.b.as_str()];
            pair.contains(&"hyper") && pair.contains(&"hyper#2")
        })
        .expect("hyper and hyper#2 are compared");
    assert_ne!(aa.outcome, brigade_stats::Outcome::Win, "{aa:?}");
    assert!(aa.ratio.unwrap() < 1.05, "{aa:?}");
    // The leader names the handicapped copy never.
    let leader = report.cells[0].efficiency_levels[0]
        .leader
        .clone()
        .expect("a judged level has a leader");
    assert!(
        !leader.runtimes.contains(&"hyper#3".to_owned()),
        "{leader:?}"
    );
    // The cost breakdown: syscalls per request are counted where perf may count them, and two
    // servers of one runtime at one rate make about as many.
    let (one, two) = (find("hyper"), find("hyper#2"));
    match (one.syscalls_per_request, two.syscalls_per_request) {
        (Some(a), Some(b)) => {
            assert!(a > 0.0 && b > 0.0);
            assert!((a / b - 1.0).abs() < 0.10, "{a} vs {b}");
            assert!(one.context_switches_per_request.is_some());
        }
        _ => {
            let why = one.counts_note.as_deref().unwrap_or_default();
            assert!(why.starts_with("not measured: "), "{why}");
            if std::env::var_os("CI").is_some() {
                panic!("CI installs perf and runs as root, so syscalls are counted: {why}");
            }
        }
    }
    assert!(one.user_cpu_us_per_request.is_some() && one.system_cpu_us_per_request.is_some());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| hyper#3 | 2 | 60/s |"), "{md}");
    assert!(md.contains("handicap +1000 µs"), "{md}");
    assert!(md.contains("Calibration"), "{md}");
}

/// A cgroup of its own for `pid` (cgroup v1's cpuacct and memory hierarchies, or v2's one),
/// removed on drop.
struct OwnCgroup {
    dirs: Vec<std::path::PathBuf>,
    path: String,
}

impl OwnCgroup {
    /// The cgroup, or why this process may not make one (not root, no writable cgroup file
    /// system), naming the step that failed.
    fn holding(name: &str, pid: u32) -> Result<OwnCgroup, String> {
        let root = Path::new("/sys/fs/cgroup");
        let path = format!("/brigade-test-{}-{name}", std::process::id());
        let relative = path.trim_start_matches('/');
        let dirs = if root.join("cgroup.controllers").exists() {
            vec![root.join(relative)]
        } else {
            vec![
                root.join("cpuacct").join(relative),
                root.join("memory").join(relative),
            ]
        };
        let mut cgroup = OwnCgroup {
            dirs: Vec::new(),
            path,
        };
        for dir in dirs {
            std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
            cgroup.dirs.push(dir.clone());
            let procs = dir.join("cgroup.procs");
            std::fs::write(&procs, pid.to_string())
                .map_err(|e| format!("writing {pid} to {}: {e}", procs.display()))?;
        }
        Ok(cgroup)
    }
}

impl Drop for OwnCgroup {
    fn drop(&mut self) {
        for dir in &self.dirs {
            // Its process goes back to the root first: a cgroup with members cannot be removed.
            if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
                let root = dir.parent().unwrap().join("cgroup.procs");
                for pid in text.lines() {
                    let _ = std::fs::write(&root, pid);
                }
            }
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Side by side on servers compare did not start (containers, in the script): each runtime's CPU
/// from its cgroups in nanoseconds, each level judged, and a runtime under two labels (`axum` and
/// `axum#b`, the shape of containers beside loopback) judged against itself as a pair.
#[test]
fn compare_external_runs_side_by_side_on_servers_read_from_their_cgroups() {
    let _alone = crate::measuring::alone();
    let data = tempfile::tempdir().unwrap();
    // On the CPUs compare gives its own servers, as the containers script pins its containers:
    // unpinned, the two axum copies could settle on different cores (one beside the generator),
    // and the pair would measure where they ran (an A/A pair came out 6.5% apart that way).
    let plan = CpuPlan::split(&available_cpus());
    let servers: Vec<(&str, &str, Served)> =
        [("axum", "axum"), ("axum#b", "axum"), ("hyper", "hyper")]
            .into_iter()
            .enumerate()
            .map(|(i, (label, runtime))| {
                let dir = data.path().join(i.to_string());
                let served = Served::start_pinned(runtime, "memory", &dir, 0, plan.server_mask());
                (label, runtime, served)
            })
            .collect();
    let mut cgroups = Vec::new();
    for (label, _, served) in &servers {
        match OwnCgroup::holding(&label.replace('#', "-"), served.child.id()) {
            Ok(c) => cgroups.push(c),
            Err(why) => {
                // Loud, and a failure where CI asks for cgroups: a silent skip would pass a
                // test that measured nothing.
                brigade_kit::skip::skip_unless_required(
                    "BRIGADE_REQUIRE_CGROUP",
                    &format!(
                        "compare_external_runs_side_by_side_on_servers_read_from_their_cgroups: \
                         no cgroup can be made here (needs root and a writable /sys/fs/cgroup): \
                         {why}"
                    ),
                );
                return;
            }
        }
    }
    let mut specs = Vec::new();
    for ((label, _, served), cgroup) in servers.iter().zip(&cgroups) {
        for service in ["waiter", "tables", "kitchen"] {
            specs.push("--external".to_owned());
            specs.push(format!("{label}:{service}={}", served.url(service)));
        }
        specs.push("--external-cgroup".to_owned());
        specs.push(format!("{label}:all={}", cgroup.path));
    }
    let mut args: Vec<&str> = specs.iter().map(String::as_str).collect();
    args.extend([
        "--scenarios",
        "waiter",
        "--users",
        "2",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--side-by-side-rates",
        "150",
        "--rounds",
        "2",
        "--windows",
        "4",
        "--count-seconds",
        "0",
        "--budget",
        "0s",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cgroups");
    let (report, stdout) = compare(&out, &args);
    assert_eq!(
        report.settings.runtimes,
        ["axum", "axum#b", "hyper"],
        "{stdout}"
    );
    assert_eq!(report.side_by_side.len(), 1, "{stdout}");
    let cell = &report.side_by_side[0];
    assert_eq!(cell.runtimes.len(), 3);
    for row in &cell.runtimes {
        // Two rounds of four windows (the same external servers in each).
        assert_eq!(row.window_cpu_ns.len(), cell.windows, "{row:?}");
        assert_eq!(cell.round_windows, [4, 4], "{cell:?}");
        // The cgroup's nanoseconds: a loaded server used CPU in every window.
        assert!(row.window_cpu_ns.iter().all(|&ns| ns > 0), "{row:?}");
        assert!(row.cpu_us_per_request > 0.0, "{row:?}");
    }
    assert!(cell.interrupts_us_per_request.is_some(), "{cell:?}");
    // The isolated runs read the same cgroups.
    for server in &report.servers {
        let source = server.source.as_deref().unwrap();
        assert!(source.starts_with("the cgroups of all"), "{source}");
    }
    for run in &report.runs {
        assert!(run.server_cpu_us_per_request().is_some(), "{run:?}");
    }
    if let Some(why) = &cell.not_judged {
        // 150/s is light, so only the machine can stop the level from being judged: other
        // processes keeping the generator's CPU busy. Said loudly, as the pair goes unjudged.
        assert!(why.starts_with("generator-bound"), "{why}\n{stdout}");
        brigade_kit::skip::loud(&format!(
            "!!! compare_external_runs_side_by_side_on_servers_read_from_their_cgroups: the pair \
             axum / axum#b was not judged, the level was not: {why}"
        ));
        assert!(report.pairs.is_empty(), "{:?}", report.pairs);
        return;
    }
    // The one runtime under two labels is judged against itself, and nothing else is a pair.
    assert_eq!(report.pairs.len(), 1, "{:?}", report.pairs);
    let pair = &report.pairs[0];
    let mut names = [pair.a.as_str(), pair.b.as_str()];
    names.sort_unstable();
    assert_eq!(names, ["axum", "axum#b"]);
    // Both labels are the same build, started alike, pinned alike, loaded alike: the pair is
    // judged (an interval from six windows), and it finds them close. Not necessarily within the
    // ±2% margin: two processes of one build differ by their layout and what each holds (ratios
    // of 1.01–1.04 here, one run in six a "win" past the margin), but never by 15%, which only
    // a broken measurement makes (one window carrying a process's cumulative CPU moves the
    // geometric mean of six windows by half).
    assert_ne!(pair.outcome, brigade_stats::Outcome::NotJudged, "{pair:?}");
    let ratio = pair.ratio.unwrap();
    assert!(
        (1.0 / 1.15..=1.15).contains(&ratio),
        "the same runtime under two labels came out {:.1}% apart: {pair:?}",
        (ratio - 1.0) * 100.0
    );
    assert!(
        pair.ci_low.unwrap() <= ratio && ratio <= pair.ci_high.unwrap(),
        "{pair:?}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## The same runtime under two labels"), "{md}");
}

/// `compare --stores memory,embedded`: a whole comparison per store in its own folder, then one
/// report setting every runtime's figures on each store against memory.
#[test]
fn compare_stores_sets_every_store_against_memory_in_one_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stores");
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args([
            "compare",
            "--stores",
            "memory,embedded",
            "--runtimes",
            "axum,hyper",
            "--scenarios",
            "waiter",
            "--users",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--no-side-by-side",
            "--no-progress",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("brigade runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for store in ["memory", "embedded"] {
        let one = json::read(&out.join(format!("store-{store}/report.json"))).unwrap();
        assert_eq!(one.settings.store, store);
        assert_eq!(one.runs.len(), 2, "one run per runtime");
    }
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let report: brigade_report::study::StudyReport = serde_json::from_str(&text).unwrap();
    let table = report.sections[0].tables.first().expect("the stores table");
    for runtime in ["axum", "hyper"] {
        for store in ["memory", "embedded"] {
            let at = [
                ("scenario", "waiter"),
                ("users", "2"),
                ("runtime", runtime),
                ("store", store),
            ];
            assert!(
                table.value(&at, "throughput").unwrap() > 0.0,
                "{runtime} {store}"
            );
            let slower = table.value(&at, "slower than memory").unwrap();
            if store == "memory" {
                assert_eq!(slower, 1.0);
            } else {
                assert!(slower > 0.0, "{slower}");
            }
        }
    }
    assert!(
        report.summary.contains("With the embedded store (redb"),
        "{}",
        report.summary
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("store-embedded/report.md"), "{md}");
}

/// `compare --protocols h1,h2-tls`: a whole comparison per protocol in its own folder (servers
/// started over TLS for h2-tls, every load speaking it, side-by-side verdicts in each), then one
/// report setting every runtime's figures over each protocol against h1.
#[test]
fn compare_protocols_runs_one_comparison_per_protocol_and_sets_each_against_h1() {
    let _alone = crate::measuring::alone();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("protocols");
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args([
            "compare",
            "--protocols",
            "h1,h2-tls",
            "--runtimes",
            "axum,hyper",
            "--scenarios",
            "waiter",
            "--users",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--side-by-side-rates",
            "60",
            "--rounds",
            "2",
            "--windows",
            "2",
            "--count-seconds",
            "0",
            "--budget",
            "0s",
            "--store",
            "memory",
            "--no-progress",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("brigade runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for protocol in ["h1", "h2-tls"] {
        let one = json::read(&out.join(format!("protocol-{protocol}/report.json"))).unwrap();
        assert_eq!(one.settings.protocol.name(), protocol);
        assert_eq!(one.runs.len(), 2, "one isolated run per runtime");
        for run in &one.runs {
            clean(run);
            let result = finished(run);
            assert_eq!(result.settings.protocol.name(), protocol);
            // Over TLS the servers were reached at their https:// URLs, with a TLS section.
            let tls = protocol == "h2-tls";
            assert_eq!(result.tls.is_some(), tls, "{protocol}");
            assert!(result
                .settings
                .targets
                .iter()
                .all(|t| t.contains("https://") == tls));
        }
        assert_eq!(
            one.side_by_side.len(),
            1,
            "{protocol}: one side-by-side level"
        );
        let level = &one.side_by_side[0];
        assert_eq!(level.runtimes.len(), 2);
        assert!(level
            .runtimes
            .iter()
            .all(|r| r.requests > 0 && r.errors == 0));
        let efficiency = one
            .comparisons
            .iter()
            .filter(|c| c.measure == brigade_report::verdict::Measure::Efficiency)
            .count();
        assert_eq!(efficiency, 1, "{protocol}: axum against hyper side by side");
    }
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let report: brigade_report::study::StudyReport = serde_json::from_str(&text).unwrap();
    let table = report.sections[0]
        .tables
        .first()
        .expect("the protocols table");
    for runtime in ["axum", "hyper"] {
        for protocol in ["h1", "h2-tls"] {
            let at = [
                ("scenario", "waiter"),
                ("users", "2"),
                ("runtime", runtime),
                ("protocol", protocol),
            ];
            assert!(table.value(&at, "throughput, isolated").unwrap() > 0.0);
            let ratio = table.value(&at, "CPU against h1").unwrap();
            assert!(protocol != "h1" || ratio == 1.0, "{ratio}");
        }
    }
    let titles: Vec<&str> = report.sections.iter().map(|s| s.title.as_str()).collect();
    assert!(titles.contains(&"Protocol: h1") && titles.contains(&"Protocol: h2-tls"));
    assert!(
        report.summary.contains("Over h2-tls the runtimes spend"),
        "{}",
        report.summary
    );
}
