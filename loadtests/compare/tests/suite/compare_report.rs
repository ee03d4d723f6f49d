//! Report rendering on a synthetic comparison: the three files exist, the markdown's numbers are the
//! JSON's, the HTML carries its charts as inline SVG, and the JSON reads back whole.

use std::collections::BTreeMap;

use brigade_compare as compare;
use brigade_compare::judge::Evidence;
use brigade_records::cpus::CpuPlan;
use brigade_records::proc::{ProcSeries, ProcUsage};
use brigade_records::result::{
    Errors, Latency, LoadResult, LoadSettings, Machine, RouteResult, Second,
};
use brigade_records::runcpu::RunCpu;
use brigade_records::side::{SideCell, SideRuntime};
use brigade_report::verdict;
use brigade_report::verdict::Rule;
use brigade_report::{self as report, json, markdown, Report, RunRecord};

fn result(hits_per_s: f64, elapsed_s: f64, errors: u64, mean_ms: f64) -> LoadResult {
    let requests = (hits_per_s * elapsed_s).round() as u64;
    let total = RouteResult {
        name: "total".into(),
        requests,
        ok: requests - errors,
        errors: Errors {
            status_5xx: errors,
            ..Errors::default()
        },
        bytes_sent: requests * 120,
        bytes_received: requests * 300,
        hits_per_s,
        bytes_per_s: hits_per_s * 420.0,
        latency: Latency {
            mean_ms,
            p50_ms: mean_ms * 0.9,
            p90_ms: mean_ms * 1.5,
            p99_ms: mean_ms * 3.0,
            p999_ms: mean_ms * 6.0,
            max_ms: mean_ms * 10.0,
        },
        histogram: String::new(),
        ..RouteResult::default()
    };
    LoadResult {
        settings: LoadSettings {
            targets: vec!["waiter=http://127.0.0.1:1".into()],
            scenario: "waiter".into(),
            users: Some(10),
            rate: None,
            connections: 10,
            duration_s: Some(elapsed_s),
            requests: None,
            warmup_s: 1.0,
            keepalive: true,
            threads: 1,
            timeout_ms: 5000,
            think_ms: 0,
            pace_tick_ms: None,
            seed: None,
            shard: None,
            protocol: Default::default(),
            streams: 1,
        },
        machine: Machine::default(),
        started_at: "2025-01-01T00:00:00Z".into(),
        elapsed_s,
        generator_cpu_percent: 40.0,
        routes: vec![RouteResult {
            name: "GET /waiters".into(),
            ..total.clone()
        }],
        total,
        // Three measured seconds, a little apart, as a real run's series.
        seconds: (0..elapsed_s as u32)
            .map(|second| Second {
                second,
                requests: (hits_per_s * (1.0 + 0.004 * f64::from(second % 3) - 0.004)).round()
                    as u64,
                errors: if second == 0 { errors } else { 0 },
                p50_ms: mean_ms * 0.9,
                p99_ms: mean_ms * 3.0,
            })
            .collect(),
        sub_windows: Vec::new(),
        window: None,
        shards: Vec::new(),
        tls: None,
        attempt: None,
        interrupted: None,
    }
}

fn run(
    index: usize,
    repeat: u32,
    runtime: &str,
    scenario: &str,
    users: u32,
    hits: f64,
    errors: u64,
) -> RunRecord {
    RunRecord {
        index,
        repeat,
        runtime: runtime.into(),
        scenario: scenario.into(),
        users,
        preload: 0,
        reset: None,
        result: Some(result(hits, 3.0, errors, 1000.0 * users as f64 / hits)),
        error: None,
        server: ProcUsage {
            cpu_percent: 97.5,
            peak_rss_mib: 12.25,
            mean_rss_mib: 11.0,
            samples: 30,
        },
        generator: ProcUsage {
            cpu_percent: 40.0,
            peak_rss_mib: 20.0,
            mean_rss_mib: 20.0,
            samples: 30,
        },
        generator_cpu_percent: 40.0,
        generator_bound: None,
        contended: None,
        cpu: RunCpu::default(),
        server_samples: ProcSeries {
            pid: 42,
            samples: Vec::new(),
        },
        window_s: (1.0, 4.0),
    }
}

fn synthetic() -> Report {
    let runtimes = vec!["axum".to_owned(), "actix".to_owned()];
    let scenarios = vec!["waiter".to_owned(), "hello".to_owned()];
    let users = vec![10, 30];
    let mut runs = Vec::new();
    for repeat in 0..2 {
        for scenario in &scenarios {
            for &u in &users {
                for runtime in &runtimes {
                    let base = if runtime == "actix" { 1300.0 } else { 1000.0 };
                    let hits = base + u as f64 + repeat as f64 * 7.0;
                    let mut record = run(
                        runs.len(),
                        repeat,
                        runtime,
                        scenario,
                        u,
                        hits,
                        u64::from(repeat),
                    );
                    if scenario == "hello" {
                        record.generator_cpu_percent = 99.0;
                        record.server.cpu_percent = 55.0;
                        record.cpu = RunCpu {
                            generator_process: 99.0,
                            server_process: 55.0,
                            ..RunCpu::default()
                        };
                        record.generator_bound = brigade_meter::runcpu::generator_bound(
                            &record.cpu,
                            brigade_meter::runcpu::CpuShape {
                                generator_cpus: 1,
                                server_cpus: 1,
                                pinned: true,
                            },
                        );
                    }
                    runs.push(record);
                }
            }
        }
    }
    // Side by side at 10 users: axum spends 10% more CPU per request than actix, window by window
    // under the same machine noise.
    let side_by_side = vec![side_cell("waiter", 10, &[("axum", 55.0), ("actix", 50.0)])];
    let mut report = Report {
        started_at: "2025-01-01T00:00:00Z".into(),
        wall_s: 75.0,
        machine: Machine {
            hostname: "box".into(),
            cores: 2,
            cpu: "Test CPU".into(),
            ..Machine::default()
        },
        versions: report::Versions {
            brigade: "0.1.0".into(),
            ..report::Versions::default()
        },
        threads: report::ThreadSetup {
            cpus: CpuPlan::split(&[0, 1]),
            server_workers: 1,
            workers_reported: BTreeMap::from([
                ("axum".to_owned(), Some(1)),
                ("actix".to_owned(), Some(1)),
            ]),
            limits_reported: BTreeMap::new(),
            generator_threads: 1,
        },
        settings: report::Settings {
            runtimes,
            store: "embedded".into(),
            scenarios,
            users,
            preloads: vec![0],
            duration_s: 3.0,
            warmup_s: 1.0,
            repeat: 2,
            rule: Rule::default(),
            side_by_side: None,
            handicaps: BTreeMap::new(),
            engine_variants: BTreeMap::new(),
            timeout_ms: 5000,
            quick: false,
            interleaving: "together".into(),
            command_line: "brigade compare".into(),
            services: vec!["api".into(), "auth".into()],
            server_command: "srv serve --listen {listen}".into(),
            keepalive: true,
            protocol: Default::default(),
            streams: 1,
            rate: None,
            seed: Some(7),
            thresholds: Vec::new(),
            setup_notes: Vec::new(),
            external: false,
            slo: None,
        },
        state: report::StateSetup::default(),
        servers: Vec::new(),
        runs,
        rows: Vec::new(),
        cells: Vec::new(),
        scenarios: Vec::new(),
        side_by_side,
        comparisons: Vec::new(),
        pairs: Vec::new(),
        notes: vec!["a synthetic report".into()],
        threshold_checks: Vec::new(),
        baseline: None,
        slo_searches: Vec::new(),
        phases: Vec::new(),
        correctness: None,
    };
    rejudge_in_memory(&mut report);
    report
}

/// Derives the report's rows, verdicts, checks and notes from its runs and windows again.
fn rejudge_in_memory(report: &mut Report) {
    let judged = compare::judge(&Evidence::of(report), &report.settings.rule).expect("judged");
    let baseline = report.baseline.clone();
    *report = Report::new(report.clone().into_measurements(), judged.into_parts())
        .with_baseline(baseline);
}

/// One side-by-side level: every runtime's CPU per window under the same machine noise.
fn side_cell(scenario: &str, users: u32, costs: &[(&str, f64)]) -> SideCell {
    let windows = 12;
    SideCell {
        scenario: scenario.into(),
        users,
        preload: 0,
        level: "40%".into(),
        rate_per_s: 2000.0,
        rate_from: "given".into(),
        window_s: 1.0,
        windows,
        runtimes: costs
            .iter()
            .enumerate()
            .map(|(i, (runtime, us))| SideRuntime {
                runtime: (*runtime).into(),
                window_cpu_ns: (0..windows)
                    .map(|w| {
                        let machine = 1.0 + 0.2 * ((w * 5 % 7) as f64 / 7.0 - 0.5);
                        let own = 1.0 + 0.003 * ((w + i) % 3) as f64;
                        (us * 2000.0 * 1e3 * machine * own) as u64
                    })
                    .collect(),
                window_requests: vec![2000; windows],
                requests: 2000 * windows as u64,
                achieved_per_s: 2000.0,
                cpu_us_per_request: *us,
                user_cpu_us_per_request: Some(us * 0.4),
                system_cpu_us_per_request: Some(us * 0.6),
                syscalls_per_request: Some(3.5),
                context_switches_per_request: Some(0.25),
                ..SideRuntime::default()
            })
            .collect(),
        ..SideCell::default()
    }
}

/// The markdown table rows of one scenario, as header → cell maps.
fn markdown_rows(md: &str, scenario: &str) -> Vec<BTreeMap<String, String>> {
    let section = md
        .split(&format!("## Scenario `{scenario}`"))
        .nth(1)
        .expect("the scenario's section");
    let mut lines = section.lines().skip_while(|l| !l.starts_with('|'));
    let split = |l: &str| {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect::<Vec<_>>()
    };
    let header = split(lines.next().unwrap());
    assert_eq!(header, brigade_report::render::TABLE_HEADER);
    lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| header.iter().cloned().zip(split(l)).collect())
        .collect()
}

#[test]
fn the_three_files_are_written_and_agree_with_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic();
    let written = report::write_all(&report, dir.path()).unwrap();
    for path in [&written.json, &written.markdown, &written.html] {
        assert!(
            std::fs::metadata(path).unwrap().len() > 0,
            "{} is empty",
            path.display()
        );
    }

    // report.json reads back whole (floats to within their printed precision).
    let back = json::read(&written.json).unwrap();
    assert_eq!(back.runs.len(), report.runs.len());
    assert_eq!(back.rows.len(), report.rows.len());
    assert_eq!(back.settings, report.settings);
    assert_eq!(back.threads, report.threads);
    let labels = |r: &Report| {
        r.cells
            .iter()
            .map(|c| c.verdict.label())
            .collect::<Vec<_>>()
    };
    assert_eq!(labels(&back), labels(&report));
    for (a, b) in back.runs.iter().zip(&report.runs) {
        let (a, b) = (a.result.as_ref().unwrap(), b.result.as_ref().unwrap());
        assert_eq!(a.total.requests, b.total.requests);
        assert!((a.total.hits_per_s - b.total.hits_per_s).abs() < 1e-9);
    }

    let md = std::fs::read_to_string(&written.markdown).unwrap();
    for scenario in &report.settings.scenarios {
        let md_rows = markdown_rows(&md, scenario);
        let json_rows: Vec<_> = back
            .rows
            .iter()
            .filter(|r| &r.scenario == scenario)
            .collect();
        assert_eq!(md_rows.len(), json_rows.len());
        for (md_row, row) in md_rows.iter().zip(json_rows) {
            assert_eq!(md_row["runtime"], row.runtime);
            assert_eq!(md_row["users"], row.users.to_string());
            let close = |name: &str, value: f64, step: f64| {
                let shown: f64 = md_row[name].parse().unwrap();
                assert!(
                    (shown - value).abs() <= step + 1e-9,
                    "{name}: markdown {shown} vs json {value}"
                );
            };
            close("hits/s", row.hits_per_s, 0.05);
            close("KiB/s", row.kib_per_s, 0.05);
            close("mean ms", row.mean_ms, 0.0005);
            close("p99 ms", row.p99_ms, 0.0005);
            close("error %", row.error_pct, 0.005);
            close("server CPU %", row.server_cpu_pct, 0.05);
            close("peak RSS MiB", row.peak_rss_mib, 0.05);
            assert_eq!(md_row["requests"], row.requests.to_string());
        }
    }
    // Each scenario's verdict label appears in the markdown and the HTML.
    let html = std::fs::read_to_string(&written.html).unwrap();
    for v in &back.scenarios {
        assert!(
            md.contains(&format!("**{}**", v.verdict.label())),
            "{}",
            v.verdict.label()
        );
        assert!(html.contains(&v.verdict.label()));
    }
    // The setup names the services the server announced and how it was started.
    assert!(
        md.contains(
            "- Server: services api, auth (as the server announced them); started as \
             `srv serve --listen {listen}`"
        ),
        "{md}"
    );
    assert!(html.contains("<tr><th>Server</th><td>services api, auth"));
}

#[test]
fn rows_are_medians_over_the_repeats_and_requests_match_hits_times_duration() {
    let report = synthetic();
    let row = report
        .rows
        .iter()
        .find(|r| r.scenario == "waiter" && r.users == 10 && r.runtime == "actix")
        .unwrap();
    // Repeats at 1310 and 1317 hits/s.
    assert!((row.hits_per_s - 1313.5).abs() < 1e-9);
    assert_eq!((row.hits_per_s_min, row.hits_per_s_max), (1310.0, 1317.0));
    assert_eq!(row.runs, 2);
    for run in &report.runs {
        let r = run.result.as_ref().unwrap();
        let implied = r.total.hits_per_s * r.elapsed_s;
        assert!((implied - r.total.requests as f64).abs() <= 1.0);
    }
    assert_eq!(row.requests, 3930 + 3951);
}

#[test]
fn verdicts_name_the_faster_runtime_and_refuse_a_generator_bound_scenario() {
    let report = synthetic();
    let waiter = report
        .scenarios
        .iter()
        .find(|s| s.scenario == "waiter")
        .unwrap();
    assert!(
        waiter.verdict.label().starts_with("actix +"),
        "{:?}",
        waiter.verdict
    );
    let hello = report
        .scenarios
        .iter()
        .find(|s| s.scenario == "hello")
        .unwrap();
    assert_eq!(hello.verdict.label(), "generator-bound");
    let md = markdown::render(&report);
    assert!(
        md.contains("generator-bound (2/2)"),
        "rows flag generator-bound runs"
    );
}

#[test]
fn the_html_is_self_contained_with_inline_svg_charts() {
    let html = report::html::render(&synthetic()).unwrap();
    // Three charts per scenario, and the side-by-side breakdown and forest plot where there are
    // side-by-side levels (waiter); the answer (forest plot and leaders) comes first.
    assert_eq!(html.matches("<svg").count(), 8);
    assert_eq!(html.matches("<svg class=\"forest\"").count(), 1);
    let answer = html.find("<h2>The answer</h2>").expect("the answer leads");
    assert!(answer < html.find("<h2>Verdicts</h2>").unwrap());
    assert!(html.contains("waiter: CPU per request side by side"));
    assert!(html.contains("throughput per runtime"));
    assert!(html.contains("throughput against users"));
    assert!(html.contains("latency at 30 users"));
    assert!(!html.contains("<script"), "no scripts");
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "no remote resources"
    );
    assert!(html.contains("actix") && html.contains("axum"));

    // With one user count there is no line to draw against users: that chart is left out.
    let mut one = synthetic();
    one.rows.retain(|r| r.users == 30);
    one.side_by_side.clear();
    let html = report::html::render(&one).unwrap();
    assert!(!html.contains("throughput against users"));
    assert_eq!(html.matches("<svg").count(), 4);
}

#[test]
fn rejudging_a_written_report_applies_a_new_equivalence_margin_to_the_recorded_figures() {
    let dir = tempfile::tempdir().unwrap();
    report::write_all(&synthetic(), dir.path()).unwrap();
    // actix leads axum by about 29% in every second: a win at ±5%, equivalent at ±50%.
    let wide = Rule {
        equivalence_pct: Some(50.0),
        ..Rule::default()
    };
    let rejudged = compare::rejudge(dir.path(), &wide).unwrap();
    let waiter = rejudged
        .scenarios
        .iter()
        .find(|s| s.scenario == "waiter")
        .unwrap();
    assert!(
        matches!(waiter.verdict.outcome, verdict::Outcome::Equivalent { .. }),
        "{:?}",
        waiter.verdict
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        md.contains("±50% throughput"),
        "the rewritten report says its margin"
    );
    assert_eq!(
        json::read(&dir.path().join("report.json"))
            .unwrap()
            .settings
            .rule
            .equivalence_pct,
        Some(50.0)
    );
}

#[test]
fn an_old_report_without_preloads_or_efficiency_is_rejudged_with_both() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = serde_json::to_value(synthetic()).unwrap();
    // What a report.json written before preloads, fresh state and efficiency verdicts lacks.
    let object = old.as_object_mut().unwrap();
    object.remove("state");
    object["settings"]
        .as_object_mut()
        .unwrap()
        .remove("preloads");
    for run in object["runs"].as_array_mut().unwrap() {
        let run = run.as_object_mut().unwrap();
        run.remove("preload");
        run.remove("reset");
    }
    for row in object["rows"].as_array_mut().unwrap() {
        let row = row.as_object_mut().unwrap();
        row.remove("preload");
        row.remove("server_cpu_us_per_request");
    }
    for list in ["cells", "scenarios"] {
        for cell in object[list].as_array_mut().unwrap() {
            let cell = cell.as_object_mut().unwrap();
            cell.remove("preload");
            cell.remove("efficiency");
            cell.remove("efficiency_levels");
            // Reports before the three-way rule called an open verdict a tie.
            if cell["verdict"]["outcome"]["kind"] == "undecided" {
                cell.get_mut("verdict").unwrap()["outcome"]["kind"] = "tie".into();
            }
        }
    }
    object.remove("side_by_side");
    object.remove("comparisons");
    object["settings"].as_object_mut().unwrap().remove("rule");
    object["settings"]["noise_floor_pct"] = 5.0.into();
    std::fs::write(
        dir.path().join("report.json"),
        serde_json::to_string(&old).unwrap(),
    )
    .unwrap();
    let rejudged = compare::rejudge(dir.path(), &Rule::default()).unwrap();
    assert_eq!(rejudged.settings.preloads, vec![0]);
    // No side-by-side windows in an old report: throughput verdicts by the new rule, no efficiency.
    assert!(rejudged.cells.iter().all(|c| c.efficiency.is_none()));
    assert!(rejudged
        .comparisons
        .iter()
        .all(|c| c.measure == verdict::Measure::Throughput));
    assert!(!rejudged.comparisons.is_empty());
    // Every run used 97.5% of a core for 3 s: the µs per request follow from the requests.
    let row = &rejudged.rows[0];
    let run = rejudged
        .runs
        .iter()
        .find(|r| r.runtime == row.runtime && r.scenario == row.scenario && r.users == row.users)
        .unwrap();
    let requests = run.result.as_ref().unwrap().total.requests as f64;
    assert!((run.server_cpu_us_per_request().unwrap() - 0.975 * 3.0 * 1e6 / requests).abs() < 1e-6);
    assert!(row.server_cpu_us_per_request > 0.0);
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("efficiency verdict"), "{md}");
}

#[test]
fn the_preload_is_a_dimension_of_rows_and_cells() {
    let mut report = synthetic();
    // The same runs again at a preload of 1,000 documents, a little slower.
    let more: Vec<RunRecord> = report
        .runs
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.preload = 1_000;
            r
        })
        .collect();
    report.runs.extend(more);
    let s = &mut report.settings;
    s.preloads = vec![0, 1_000];
    rejudge_in_memory(&mut report);
    assert_eq!(report.rows.len(), 2 * 2 * 2 * 2);
    assert_eq!(report.cells.len(), 2 * 2 * 2);
    assert!(report.cells.iter().any(|c| c.preload == 1_000));
    let md = markdown::render(&report);
    let rows = markdown_rows(&md, "waiter");
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().any(|r| r["preload"] == "1000"));
    assert!(
        md.contains("10 users, preload 1,000: throughput **actix +"),
        "{md}"
    );
    let html = report::html::render(&report).unwrap();
    assert!(html.contains("throughput against preload"));
}

#[test]
fn a_baseline_shows_each_cells_change_with_the_paired_rule_and_thresholds_name_each_failure() {
    let before = synthetic();
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old");
    report::write_all(&before, &old).unwrap();

    // Now axum serves `waiter` 20% faster in every repeat; actix is unchanged.
    let mut now = synthetic();
    for r in &mut now.runs {
        if r.runtime == "axum" && r.scenario == "waiter" {
            let hits = r.result.as_ref().unwrap().total.hits_per_s * 1.2;
            r.result = Some(result(
                hits,
                3.0,
                u64::from(r.repeat),
                1000.0 * r.users as f64 / hits,
            ));
        }
    }
    rejudge_in_memory(&mut now);
    let read_back = compare::baseline::read(&old).unwrap();
    let baseline = compare::baseline::compare(&now, &[(old.clone(), read_back)], &Rule::default());
    let change = |measure: verdict::Measure, scenario: &str, users: u32| {
        baseline
            .cells
            .iter()
            .find(|c| c.measure == measure && c.scenario == scenario && c.users == users)
            .unwrap()
            .clone()
    };
    assert_eq!(baseline.cells.len(), now.comparisons.len());
    assert!(baseline.missing.is_empty() && baseline.differences.is_empty());
    // actix's lead over axum fell from ~30% to ~8%: the ratio changed, by its own interval.
    let closer = change(verdict::Measure::Throughput, "waiter", 10);
    assert_eq!((closer.a.as_str(), closer.b.as_str()), ("actix", "axum"));
    assert_eq!(closer.call, report::baseline::Call::Changed, "{closer:?}");
    assert!(closer.change_pct < -10.0, "{closer:?}");
    assert!(closer.absolute.contains("measured at another time"));
    // The gate (`--fail-on-regression`) reads the same calls: actix's lead shrank beyond the
    // margin, so relative to axum it fell behind; the unchanged efficiency ratio is no regression.
    let regressions = compare::baseline::regressions(&baseline);
    assert!(
        regressions
            .iter()
            .any(|r| r.starts_with("actix fell behind axum on throughput in waiter at 10 users")),
        "{regressions:?}"
    );
    assert!(
        regressions.iter().all(|r| !r.contains("CPU per request")),
        "{regressions:?}"
    );
    // The side-by-side ratio did not move.
    let efficiency = change(verdict::Measure::Efficiency, "waiter", 10);
    assert_eq!(
        efficiency.call,
        report::baseline::Call::Same,
        "{efficiency:?}"
    );

    // Every run's p99 is above 5 ms (the synthetic latencies are tens of ms); errors stay under
    // 0.1% (at most one of thousands).
    now.settings.thresholds = vec!["p99<5ms".into(), "errors<0.1%".into()];
    rejudge_in_memory(&mut now);
    let now = now.with_baseline(Some(baseline));
    assert_eq!(now.threshold_checks.len(), 2 * now.runs.len());
    let failed = report::thresholds::failures(&now.threshold_checks);
    assert_eq!(failed.len(), now.runs.len());
    assert!(failed.iter().all(|c| c.check.threshold == "p99<5ms"));
    assert!(
        failed[0]
            .sentence()
            .starts_with("axum, waiter, 10 users, repeat 1: p99<5ms failed: p99 = "),
        "{}",
        failed[0].sentence()
    );

    let new = dir.path().join("new");
    report::write_all(&now, &new).unwrap();
    let md = std::fs::read_to_string(new.join("report.md")).unwrap();
    assert!(md.contains("## Thresholds"), "{md}");
    assert!(md.contains(&format!(
        "**{} of {} checks failed:**",
        now.runs.len(),
        2 * now.runs.len()
    )));
    assert!(md.contains("## Against the baseline"), "{md}");
    assert!(
        md.contains("| throughput | waiter | 10 | isolated | actix vs axum |"),
        "{md}"
    );
    assert!(md.contains("changed"), "{md}");
    let html = std::fs::read_to_string(new.join("report.html")).unwrap();
    assert!(html.contains("<h2>Against the baseline</h2>") && html.contains("<h2>Thresholds</h2>"));
    assert_eq!(json::read(&new.join("report.json")).unwrap(), now);
}

#[test]
fn the_side_by_side_table_shows_the_cost_breakdown_and_the_efficiency_verdict_its_windows_give() {
    let report = synthetic();
    let efficiency: Vec<_> = report
        .comparisons
        .iter()
        .filter(|c| c.measure == verdict::Measure::Efficiency)
        .collect();
    assert_eq!(efficiency.len(), 1);
    let c = efficiency[0];
    assert_eq!((c.a.as_str(), c.b.as_str()), ("actix", "axum"));
    assert_eq!(c.outcome, brigade_stats::Outcome::Win, "{c:?}");
    assert!((c.ratio.unwrap() - 1.1).abs() < 0.01, "{c:?}");
    assert!(
        c.ci_low.unwrap() > 1.02 && c.ci_high.unwrap() < 1.2,
        "{c:?}"
    );
    assert_eq!(c.level.as_deref(), Some("40%"));
    let md = markdown::render(&report);
    assert!(md.contains("| axum | 10 | 40% | 2000 | 2000 | 12 | 55.00 | 22.00 | 33.00 | 3.50 | 0.250 | not measured |"), "{md}");
    assert!(
        md.contains("at 40% (2,000/s each): efficiency **actix +10."),
        "{md}"
    );
    assert!(md.contains("axum spends 10."), "{md}");
    // The rows of the isolated table carry the breakdown of their cell's side-by-side level.
    let row = report
        .rows
        .iter()
        .find(|r| r.scenario == "waiter" && r.users == 10 && r.runtime == "axum")
        .unwrap();
    assert_eq!(row.syscalls_per_request, Some(3.5));
    assert_eq!(row.instructions_per_request, None);
    let other = report
        .rows
        .iter()
        .find(|r| r.scenario == "waiter" && r.users == 30)
        .unwrap();
    assert_eq!(other.syscalls_per_request, None);
}

#[test]
fn a_report_holding_the_largest_numbers_is_rejudged_without_a_panic_or_a_wrap() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = synthetic();
    report.settings.repeat = u32::MAX;
    for run in &mut report.runs {
        run.repeat = u32::MAX;
    }
    report::write_all(&report, dir.path()).unwrap();
    let rejudged = compare::rejudge(dir.path(), &Rule::default()).unwrap();
    assert_eq!(rejudged.settings.repeat, u32::MAX);
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    // Repeats are shown counting from 1: the largest one is one past u32::MAX, not 0.
    assert!(
        md.contains("| 4294967296 |"),
        "no widened repeat in the runs table"
    );
}

#[test]
fn throughput_is_judged_from_runs_so_many_seconds_of_two_runs_cannot_make_a_win() {
    // Two runs each, ten tight seconds per run, but the runs themselves disagree (1,200 and
    // 1,100/s for axum, 1,000 and 980/s for actix): two samples per runtime, however many
    // seconds. Pooling the seconds as independent would call axum's 16% lead a win.
    let mut report = synthetic();
    report
        .runs
        .retain(|r| r.scenario != "waiter" || r.users != 10);
    for (repeat, axum, actix) in [(0, 1200.0, 1000.0), (1, 1100.0, 980.0)] {
        for (runtime, hits) in [("axum", axum), ("actix", actix)] {
            let mut record = run(report.runs.len(), repeat, runtime, "waiter", 10, hits, 0);
            record.result = Some(result(hits, 10.0, 0, 10.0));
            report.runs.push(record);
        }
    }
    rejudge_in_memory(&mut report);
    let c = report
        .comparisons
        .iter()
        .find(|c| {
            c.measure == verdict::Measure::Throughput && c.scenario == "waiter" && c.users == 10
        })
        .expect("a throughput comparison");
    assert_eq!((c.a.as_str(), c.b.as_str()), ("axum", "actix"), "{c:?}");
    assert_eq!(c.samples, 2, "{c:?}");
    assert_ne!(c.outcome, brigade_stats::Outcome::Win, "{c:?}");
    // One run each is reported but not judged, and says how to get a verdict.
    let mut one = synthetic();
    one.runs.retain(|r| r.repeat == 0);
    rejudge_in_memory(&mut one);
    let c = one
        .comparisons
        .iter()
        .find(|c| c.measure == verdict::Measure::Throughput && c.scenario == "waiter")
        .expect("a throughput comparison");
    assert_eq!(c.outcome, brigade_stats::Outcome::NotJudged, "{c:?}");
    assert!(c.sentence.contains("--repeat 2"), "{}", c.sentence);
}
