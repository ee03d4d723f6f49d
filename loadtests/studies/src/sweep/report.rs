//! The sweep's findings as a general [`StudyReport`]: per runtime the peak and where it peaked
//! with keep-alive on and off, every client count (hits/s, p99, bytes/s, errors, the probe's p99),
//! the body sizes and the bad URL, the memory after, and every run; charts of hits/s against
//! clients (log axis; keep-alive on and off side by side) and against body size; and the TLS
//! handshakes' table ([`super::handshakes`]).

use super::{Part, SweepResults, SweepRun, SweepSettings};
use brigade_stats::median;

use crate::lab;
use brigade_report::study::{Axis, Better, Chart, Metric, Section, Series, StudyReport, Table};

/// The peaks table's title.
pub const PEAKS_TABLE: &str = "Peak hits/s";
/// The client-count table's title.
pub const CLIENTS_TABLE: &str = "Client counts";
/// The body-size table's title.
pub const SIZES_TABLE: &str = "Body sizes and the bad URL";
/// The bad-URL answers table's title.
pub const BAD_URL_TABLE: &str = "Bad URL answers";
/// The memory table's title.
pub const MEMORY_TABLE: &str = "Memory after";
/// The every-run table's title.
pub const RUNS_TABLE: &str = "Every run";

/// Medians over the repeats of one runtime at one step.
#[derive(Debug, Clone, Copy, Default)]
struct Cell {
    hits: f64,
    p99: f64,
    bytes: f64,
    errors: f64,
    probe_p99: Option<f64>,
    generator_cpu: f64,
    flagged: usize,
}

fn cell(runs: &[&SweepRun]) -> Option<Cell> {
    let done: Vec<&&SweepRun> = runs.iter().filter(|r| r.run.result.is_some()).collect();
    if done.is_empty() {
        return None;
    }
    let of = |f: &dyn Fn(&SweepRun) -> f64| median(&done.iter().map(|r| f(r)).collect::<Vec<_>>());
    let total = |r: &SweepRun| {
        r.run
            .result
            .as_ref()
            .map(|x| x.total.clone())
            .unwrap_or_default()
    };
    let probes: Vec<f64> = done
        .iter()
        .filter_map(|r| {
            r.probe
                .as_ref()
                .filter(|p| p.answered > 0)
                .map(|p| p.p99_ms)
        })
        .collect();
    Some(Cell {
        hits: of(&|r| total(r).hits_per_s),
        p99: of(&|r| total(r).latency.p99_ms),
        bytes: of(&|r| total(r).bytes_per_s),
        errors: of(&|r| total(r).errors.total() as f64),
        probe_p99: (!probes.is_empty()).then(|| median(&probes)),
        generator_cpu: of(&|r| r.run.generator_cpu_percent),
        flagged: runs.iter().filter(|r| !r.run.flag().is_empty()).count(),
    })
}

/// Builds the report.
pub(crate) fn build(
    settings: &SweepSettings,
    results: &SweepResults,
    servers: &[(String, String)],
    started_at: String,
) -> StudyReport {
    let mut study = StudyReport {
        study: "sweep".to_owned(),
        title: "Brigade client sweep".to_owned(),
        summary: summary(settings),
        started_at,
        wall_s: 0.0,
        setup: settings.lab.setup(servers, setup_text(settings)),
        notes: notes(settings, results),
        sections: vec![
            clients_section(settings, results),
            sizes_section(settings, results),
            memory_section(settings, results),
            every_run_section(settings, results),
        ],
    };
    if let Some(section) = super::handshakes::section(settings, results) {
        // Before "Every run", which stays last.
        let last = study.sections.len() - 1;
        study.sections.insert(last, section);
    }
    study
}

/// The report's one-paragraph summary: what was asked of which runtimes.
fn summary(settings: &SweepSettings) -> String {
    format!(
        "GET /bench/static/{} at {} clients with and without keep-alive, bodies of {} and a \
         bad URL at {} clients, a /health probe every 100 ms, and the servers' memory after, \
         on {}.",
        settings.client_body,
        settings
            .clients
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        settings
            .sizes
            .iter()
            .map(|&s| crate::lab::shapes::size_text(s))
            .collect::<Vec<_>>()
            .join(", "),
        settings.size_clients,
        settings.lab.runtimes.join(", ")
    )
}

/// The study's own line in the setup section: the steps, their timing and the probe.
fn setup_text(settings: &SweepSettings) -> String {
    format!(
        "client counts {} with and without keep-alive on a {}-byte body; bodies {} \
         bytes and the bad URL {} at {} clients with keep-alive; {} s measured after \
         {} s warm-up per step; memory read again {} s after the sweep; the probe asks \
         GET /health every 100 ms",
        settings
            .clients
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        settings.client_body,
        settings
            .sizes
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        super::super::lab::shapes::UNKNOWN_PATH,
        settings.size_clients,
        settings.duration.as_secs_f64(),
        settings.warmup.as_secs_f64(),
        settings.settle.as_secs_f64()
    )
}

/// The runs of one runtime at one step (one per repeat).
fn runs_at<'a>(results: &'a SweepResults, runtime: &str, step: usize) -> Vec<&'a SweepRun> {
    results
        .runs
        .iter()
        .filter(|r| r.step == step && r.run.runtime == runtime)
        .collect()
}

/// One runtime's client steps with keep-alive on or off: its rows of the client-count table, its
/// curves (hits/s and the probe's p99 against clients) and its row of the peaks table.
struct ClientsLine {
    rows: Vec<(Vec<String>, Vec<Option<f64>>)>,
    points: Vec<(f64, f64)>,
    probe_points: Vec<(f64, f64)>,
    peak: Vec<Option<f64>>,
}

fn clients_line(
    settings: &SweepSettings,
    results: &SweepResults,
    runtime: &str,
    keepalive: bool,
) -> ClientsLine {
    let mut line = ClientsLine {
        rows: Vec::new(),
        points: Vec::new(),
        probe_points: Vec::new(),
        peak: Vec::new(),
    };
    let mut peak: Option<(f64, u32, f64, f64)> = None;
    let mut errors = 0.0;
    for (i, step) in settings.steps.iter().enumerate() {
        if step.part != Part::Clients || step.keepalive != keepalive {
            continue;
        }
        let dims = vec![
            runtime.to_owned(),
            step.keepalive_text().to_owned(),
            step.clients.to_string(),
        ];
        let Some(c) = cell(&runs_at(results, runtime, i)) else {
            line.rows.push((dims, vec![None; 7]));
            continue;
        };
        line.rows.push((
            dims,
            vec![
                Some(c.hits),
                Some(c.p99),
                Some(c.bytes),
                Some(c.errors),
                c.probe_p99,
                Some(c.generator_cpu),
                Some(c.flagged as f64),
            ],
        ));
        line.points.push((step.clients as f64, c.hits));
        if let Some(p) = c.probe_p99 {
            line.probe_points.push((step.clients as f64, p));
        }
        errors += c.errors;
        if peak.is_none_or(|(hits, ..)| c.hits > hits) {
            peak = Some((c.hits, step.clients, c.p99, c.bytes));
        }
    }
    line.peak = match peak {
        Some((hits, clients, p99, bytes)) => vec![
            Some(hits),
            Some(clients as f64),
            Some(p99),
            Some(bytes),
            Some(errors),
        ],
        None => vec![None; 5],
    };
    line
}

/// Client counts with keep-alive on and off: the peaks, every count and their charts.
fn clients_section(settings: &SweepSettings, results: &SweepResults) -> Section {
    let mut clients_table = Table::new(
        CLIENTS_TABLE,
        &["runtime", "keep-alive", "clients"],
        vec![
            Metric::new("hits/s", "", Better::Higher, 0),
            Metric::new("p99", "ms", Better::Lower, 2),
            Metric::new("bytes/s", "", Better::Higher, 0),
            Metric::new("errors", "", Better::Lower, 0),
            Metric::new("probe p99", "ms", Better::Lower, 2),
            Metric::new("generator CPU", "%", Better::Neither, 0),
            Metric::new("flagged runs", "", Better::Lower, 0),
        ],
    );
    let mut peaks = Table::new(
        PEAKS_TABLE,
        &["runtime", "keep-alive"],
        vec![
            Metric::new("peak hits/s", "", Better::Higher, 0),
            Metric::new("at clients", "", Better::Neither, 0),
            Metric::new("p99 at peak", "ms", Better::Lower, 2),
            Metric::new("bytes/s at peak", "", Better::Higher, 0),
            Metric::new("errors", "", Better::Lower, 0),
        ],
    );
    let [mut on, mut off, mut probe_series] = [Vec::new(), Vec::new(), Vec::new()];
    for runtime in &settings.lab.runtimes {
        for keepalive in [true, false] {
            let line = clients_line(settings, results, runtime, keepalive);
            for (dims, values) in line.rows {
                clients_table.push(dims, values);
            }
            let on_off = if keepalive { "on" } else { "off" };
            peaks.push(vec![runtime.clone(), on_off.to_owned()], line.peak);
            let name = runtime.clone();
            if keepalive {
                on.push(Series {
                    name,
                    points: line.points,
                });
                probe_series.push(Series {
                    name: runtime.clone(),
                    points: line.probe_points,
                });
            } else {
                off.push(Series {
                    name,
                    points: line.points,
                });
            }
        }
    }
    Section {
        title: "Clients, keep-alive on and off".to_owned(),
        text: vec![format!(
            "Closed loop: each client sends its next request when the last is answered. \
             Without keep-alive every request opens a new connection (as ab did). Figures \
             are medians over the repeats; the probe's p99 is that of one extra client \
             asking GET /health every 100 ms during the step. Bytes/s counts both \
             directions, headers included; the body is {} bytes.",
            settings.client_body
        )],
        tables: vec![peaks, clients_table],
        charts: clients_charts(on, off, probe_series),
    }
}

/// hits/s against clients with keep-alive on and off, and the probe's p99 with it on.
fn clients_charts(on: Vec<Series>, off: Vec<Series>, probe: Vec<Series>) -> Vec<Chart> {
    vec![
        Chart {
            title: "hits/s against clients, keep-alive on".to_owned(),
            x: Axis::log("clients"),
            y: Axis::linear("hits/s"),
            series: on,
        },
        Chart {
            title: "hits/s against clients, keep-alive off".to_owned(),
            x: Axis::log("clients"),
            y: Axis::linear("hits/s"),
            series: off,
        },
        Chart {
            title: "probe p99 against clients, keep-alive on".to_owned(),
            x: Axis::log("clients"),
            y: Axis::log("GET /health p99, ms"),
            series: probe,
        },
    ]
}

/// Body sizes and the bad URL: the sizes' table, the bad URL's answers and hits/s by size.
fn sizes_section(settings: &SweepSettings, results: &SweepResults) -> Section {
    let (sizes, by_size) = sizes_table(settings, results);
    Section {
        title: "Body sizes and a bad URL".to_owned(),
        text: vec![format!(
            "GET /bench/static/{{size}} and an unknown path ({}), answered 404 with the \
             JSON error body, at {} clients with keep-alive.",
            super::super::lab::shapes::UNKNOWN_PATH,
            settings.size_clients
        )],
        tables: vec![sizes, bad_url_table(results)],
        charts: vec![Chart {
            title: "hits/s against body size".to_owned(),
            x: Axis::log("body, bytes"),
            y: Axis::log("hits/s"),
            series: by_size,
        }],
    }
}

/// The body-size steps per runtime, and each runtime's hits/s against body size.
fn sizes_table(settings: &SweepSettings, results: &SweepResults) -> (Table, Vec<Series>) {
    let mut sizes = Table::new(
        SIZES_TABLE,
        &["runtime", "body"],
        vec![
            Metric::new("body", "bytes", Better::Neither, 0),
            Metric::new("hits/s", "", Better::Higher, 0),
            Metric::new("p99", "ms", Better::Lower, 2),
            Metric::new("bytes/s", "", Better::Higher, 0),
            Metric::new("errors", "", Better::Lower, 0),
            Metric::new("probe p99", "ms", Better::Lower, 2),
            Metric::new("flagged runs", "", Better::Lower, 0),
        ],
    );
    let mut by_size = Vec::new();
    for runtime in &settings.lab.runtimes {
        let mut points = Vec::new();
        for (i, step) in settings.steps.iter().enumerate() {
            if step.part != Part::Sizes {
                continue;
            }
            let dims = vec![runtime.clone(), step.body()];
            let Some(c) = cell(&runs_at(results, runtime, i)) else {
                sizes.push(dims, vec![None; 7]);
                continue;
            };
            sizes.push(
                dims,
                vec![
                    step.size.map(|s| s as f64),
                    Some(c.hits),
                    Some(c.p99),
                    Some(c.bytes),
                    Some(c.errors),
                    c.probe_p99,
                    Some(c.flagged as f64),
                ],
            );
            if let Some(size) = step.size {
                points.push((size as f64, c.hits));
            }
        }
        by_size.push(Series {
            name: runtime.clone(),
            points,
        });
    }
    (sizes, by_size)
}

/// What each runtime answered to the bad URL.
fn bad_url_table(results: &SweepResults) -> Table {
    let mut bad_url = Table::new(
        BAD_URL_TABLE,
        &["runtime", "error code"],
        vec![
            Metric::new("status", "", Better::Neither, 0),
            Metric::new("body", "bytes", Better::Neither, 0),
        ],
    );
    for answer in &results.bad_url {
        bad_url.push(
            vec![answer.runtime.clone(), answer.code.clone()],
            vec![Some(answer.status as f64), Some(answer.body_bytes as f64)],
        );
    }
    bad_url
}

/// Each server's memory once ready, at its peak, at the end and after settling.
fn memory_section(settings: &SweepSettings, results: &SweepResults) -> Section {
    let mut memory = Table::new(
        MEMORY_TABLE,
        &["runtime", "after the sweep"],
        vec![
            Metric::new("before", "MiB", Better::Neither, 1),
            Metric::new("peak", "MiB", Better::Lower, 1),
            Metric::new("at the end", "MiB", Better::Neither, 1),
            Metric::new("settled", "MiB", Better::Lower, 1),
            Metric::new("kept", "MiB", Better::Lower, 1),
        ],
    );
    for m in &results.memory {
        memory.push(
            vec![
                m.runtime.clone(),
                if m.kept() {
                    "kept its growth"
                } else {
                    "gave it back"
                }
                .to_owned(),
            ],
            vec![
                Some(m.before_mib),
                Some(m.peak_mib),
                Some(m.end_mib),
                Some(m.after_mib),
                Some(m.kept_mib()),
            ],
        );
    }
    Section {
        title: "Memory after".to_owned(),
        text: vec![format!(
            "Each server's resident memory once ready, its peak (VmHWM), at the end of \
             the sweep and {} s later. A server kept its growth when it still holds at \
             least half of what it grew by and at least {} MiB.",
            settings.settle.as_secs_f64(),
            super::KEPT_FLOOR_MIB
        )],
        tables: vec![memory],
        charts: Vec::new(),
    }
}

/// One row per run, the probe's figures beside the generator's.
fn every_run_section(settings: &SweepSettings, results: &SweepResults) -> Section {
    let mut every = Table::new(
        RUNS_TABLE,
        &[
            "part",
            "body",
            "clients",
            "keep-alive",
            "runtime",
            "repeat",
            "flag",
        ],
        {
            let mut m = lab::run_metrics();
            m.push(Metric::new("probe answers", "", Better::Neither, 0));
            m.push(Metric::new("probe failures", "", Better::Lower, 0));
            m.push(Metric::new("probe p99", "ms", Better::Lower, 2));
            m
        },
    );
    for r in &results.runs {
        let step = &settings.steps[r.step];
        let mut values = lab::run_values(&r.run);
        values.push(r.probe.as_ref().map(|p| p.answered as f64));
        values.push(r.probe.as_ref().map(|p| p.failed as f64));
        values.push(
            r.probe
                .as_ref()
                .filter(|p| p.answered > 0)
                .map(|p| p.p99_ms),
        );
        every.push(
            vec![
                step.part.as_str().to_owned(),
                step.body(),
                step.clients.to_string(),
                step.keepalive_text().to_owned(),
                r.run.runtime.clone(),
                (r.run.repeat + 1).to_string(),
                r.run.flag(),
            ],
            values,
        );
    }
    Section {
        title: "Every run".to_owned(),
        text: vec![
            "One row per run: what the generator counted and the CPU of the server and \
             the generator; the flag says when a run was generator-bound or contended \
             (compare's rules)."
                .to_owned(),
        ],
        tables: vec![every],
        charts: Vec::new(),
    }
}

fn notes(settings: &SweepSettings, results: &SweepResults) -> Vec<String> {
    let mut notes = Vec::new();
    // The target: without keep-alive the generator must still out-run the server.
    if let (Some(&most), Some(last)) = (
        settings.clients.iter().max(),
        settings
            .steps
            .iter()
            .position(|s| s.part == Part::Clients && !s.keepalive),
    ) {
        let step = settings
            .steps
            .iter()
            .position(|s| s.part == Part::Clients && !s.keepalive && s.clients == most)
            .unwrap_or(last);
        for r in results.runs.iter().filter(|r| r.step == step) {
            notes.push(format!(
                "{} at {most} clients without keep-alive: the generator used {:.0}% of a core \
                 (the server {:.0}%){}.",
                r.run.runtime,
                r.run.generator_cpu_percent,
                r.run.server_cpu_percent,
                match (&r.run.contended, &r.run.generator_bound) {
                    (Some(why), _) => format!(
                        " — contended, so this run cannot say which side was the limit: {why}"
                    ),
                    (None, Some(why)) => format!(" — the generator was the limit: {why}"),
                    (None, None) => ", so the generator was not the limit".to_owned(),
                }
            ));
        }
    }
    for m in results.memory.iter().filter(|m| m.kept()) {
        notes.push(format!(
            "{} kept its growth: {:.1} MiB before, {:.1} MiB at its peak, still {:.1} MiB {} s \
             after the sweep.",
            m.runtime,
            m.before_mib,
            m.peak_mib,
            m.after_mib,
            settings.settle.as_secs_f64()
        ));
    }
    if settings.lab.quick {
        notes.push(
            "--quick: short steps at three client counts; this run shows the sweep works, not \
             how the runtimes compare."
                .to_owned(),
        );
    }
    notes.extend(lab::flag_notes(results.runs.iter().map(|r| {
        let step = &settings.steps[r.step];
        (
            format!(
                "{} at {} client(s), keep-alive {}",
                step.body(),
                step.clients,
                step.keepalive_text()
            ),
            &r.run,
        )
    })));
    notes.extend(lab::flag_notes(results.handshakes.iter().map(|r| {
        let step = settings.handshakes[r.step];
        (
            format!(
                "{} TLS handshakes at {} client(s)",
                step.kind(),
                step.clients
            ),
            &r.run,
        )
    })));
    notes
}
