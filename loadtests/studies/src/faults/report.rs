//! The faults study's report: one table of every runtime × store × fault (errors during, time to
//! recover, requests lost, acknowledged writes lost, restarts needed, and each fault's own figures),
//! then a section per fault with what happened in words and the load over time (errors and p99 per
//! second, one line per runtime × store), in the general study report.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{FaultResult, FaultsSettings};
use brigade_report::setup::{limits_text, Setup};
use brigade_report::study::{Axis, Better, Chart, Metric, Section, Series, StudyReport, Table};

/// The title of the table every fault fills.
pub(super) const TABLE: &str = "Faults: runtime × store";

fn metrics() -> Vec<Metric> {
    vec![
        Metric::new("errors during", "", Better::Lower, 0),
        Metric::new("time to recover", "s", Better::Lower, 1),
        Metric::new("requests lost", "", Better::Lower, 0),
        Metric::new("acknowledged writes lost", "", Better::Lower, 0),
        Metric::new("process restarts needed", "", Better::Lower, 0),
        Metric::new("p99", "ms", Better::Lower, 2),
        Metric::new("unloaded p99", "ms", Better::Lower, 2),
        Metric::new("abusive connections left open", "", Better::Lower, 0),
        Metric::new("RSS after soak 1", "MiB", Better::Lower, 1),
        Metric::new("RSS after soak 2", "MiB", Better::Lower, 1),
    ]
}

pub(super) fn build(
    settings: &FaultsSettings,
    results: &[FaultResult],
    started_at: String,
    wall: Duration,
) -> StudyReport {
    let mut sections = vec![every_fault_section(results)];
    let mut by_fault: BTreeMap<&str, Vec<&FaultResult>> = BTreeMap::new();
    for r in results {
        by_fault.entry(&r.fault).or_default().push(r);
    }
    for (fault, rs) in by_fault {
        sections.push(fault_section(fault, &rs));
    }
    StudyReport {
        study: "faults".to_owned(),
        title: "Brigade fault study".to_owned(),
        summary: headline(
            &settings
                .faults
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            &settings.runtimes.join(", "),
            &settings.stores.join(", "),
            results,
        ),
        started_at,
        wall_s: wall.as_secs_f64(),
        setup: setup(settings, results),
        notes: notes(settings),
        sections,
    }
}

/// How every fault was run, what the study leaves out, and a warning on --quick figures.
fn notes(settings: &FaultsSettings) -> Vec<String> {
    let mut notes = vec![
        "Every fault ran on a fresh server process started as `compare` starts one; the load is \
         Brigade's generator, closed loop, with its per-second series."
            .to_owned(),
        "Not in this study (short forms in the test suite): a peer service stopped under load \
         (`tests/suite/conformance.rs`, the restaurant's peer-down checks)."
            .to_owned(),
    ];
    if settings.quick {
        notes.push("--quick: CI-sized counts and durations; not figures to quote.".to_owned());
    }
    notes
}

/// The table every fault fills, one row per runtime × store × fault.
fn every_fault_section(results: &[FaultResult]) -> Section {
    let mut table = Table::new(TABLE, &["runtime", "store", "fault"], metrics());
    for r in results {
        table.push(
            vec![r.runtime.clone(), r.store.clone(), r.fault.clone()],
            vec![
                r.errors_during,
                r.recover_s,
                r.requests_lost,
                r.writes_lost,
                r.restarts_needed,
                r.p99_ms,
                r.unloaded_p99_ms,
                r.abusive_left_open,
                r.rss_mib.map(|m| m.0),
                r.rss_mib.map(|m| m.1),
            ],
        );
    }
    Section {
        title: "Every fault".to_owned(),
        text: vec![
            "Acknowledged writes lost and process restarts needed must be 0; abusive connections \
             left open must be 0; during an abuse the normal load has no errors and its p99 stays \
             within 2× its unloaded p99; after a soak the server's RSS stays within 1.1× of its \
             RSS after the soak before. A dash: not measured for that fault."
                .to_owned(),
        ],
        tables: vec![table],
        charts: Vec::new(),
    }
}

/// One fault: what happened on each runtime × store in words, and the load second by second.
fn fault_section(fault: &str, rs: &[&FaultResult]) -> Section {
    let text = rs
        .iter()
        .map(|r| {
            let window = r
                .window
                .map(|(a, b)| format!(" (fault from {a:.1} s to {b:.1} s of the load)"))
                .unwrap_or_default();
            format!(
                "{} on {}{window}: {}",
                r.runtime,
                r.store,
                r.notes.join("; ")
            )
        })
        .collect();
    let line = |pick: fn(&brigade_records::result::Second) -> f64| {
        rs.iter()
            .map(|r| Series {
                name: format!("{} {}", r.runtime, r.store),
                points: r
                    .seconds
                    .iter()
                    .map(|s| (f64::from(s.second), pick(s)))
                    .collect(),
            })
            .collect::<Vec<_>>()
    };
    Section {
        title: fault.to_owned(),
        text,
        tables: Vec::new(),
        charts: vec![
            Chart {
                title: format!("{fault}: errors per second"),
                x: Axis::linear("seconds from the load's start"),
                y: Axis::linear("failed requests"),
                series: line(|s| s.errors as f64),
            },
            Chart {
                title: format!("{fault}: hits per second"),
                x: Axis::linear("seconds from the load's start"),
                y: Axis::linear("requests completed"),
                series: line(|s| s.requests as f64),
            },
            Chart {
                title: format!("{fault}: p99 per second"),
                x: Axis::linear("seconds from the load's start"),
                y: Axis::log("p99, ms"),
                series: line(|s| s.p99_ms),
            },
        ],
    }
}

/// The study's first line, from the same figures as its table: the requests and acknowledged
/// writes lost, the restarts needed and the abusive connections left open, summed, each named by
/// where it happened when it is not zero — so it cannot claim what the table contradicts.
fn headline(faults: &str, runtimes: &str, stores: &str, results: &[FaultResult]) -> String {
    let measure = |name: &str, pick: fn(&FaultResult) -> Option<f64>| -> String {
        let at: Vec<String> = results
            .iter()
            .filter_map(|r| pick(r).filter(|v| *v > 0.0).map(|v| (r, v)))
            .map(|(r, v)| format!("{v:.0} on {} {} {}", r.runtime, r.store, r.fault))
            .collect();
        let total: f64 = results.iter().filter_map(pick).sum();
        if at.is_empty() {
            format!("0 {name}")
        } else {
            format!("{total:.0} {name} ({})", at.join(", "))
        }
    };
    let failed = results
        .iter()
        .filter(|r| r.notes.iter().any(|n| n.starts_with("not run")))
        .count();
    let mut line = format!(
        "{faults} on {runtimes} × {stores}: {}, {}, {}, {}",
        measure("requests lost", |r| r.requests_lost),
        measure("acknowledged writes lost", |r| r.writes_lost),
        measure("restarts needed", |r| r.restarts_needed),
        measure("abusive connections left open", |r| r.abusive_left_open),
    );
    if failed > 0 {
        line.push_str(&format!(
            "; {failed} fault run(s) not run (see their notes)"
        ));
    }
    line.push('.');
    line
}

fn setup(settings: &FaultsSettings, results: &[FaultResult]) -> Setup {
    let mut out = crate::server_setup(&settings.launch, &settings.command_line);
    let limits: BTreeMap<String, Option<String>> = results
        .iter()
        .filter(|r| r.server_limits.is_some())
        .map(|r| (r.runtime.clone(), r.server_limits.clone()))
        .collect();
    out.line("Runtimes", settings.runtimes.join(", "))
        .line("Stores", settings.stores.join(", "))
        .line(
            "Load",
            format!(
                "scenario {} with {} users for {} s around each fault; soak {} twice for {} s; \
                 {} worker(s) per server",
                settings.scenario.name(),
                settings.users,
                settings.duration.as_secs(),
                settings.soak_scenario.name(),
                settings.soak.as_secs(),
                settings.workers
            ),
        )
        .line(
            "Abuse",
            format!(
                "{} slowloris, {} idle keep-alive, {} unfinished bodies, {} past the limit",
                settings.slowloris, settings.idle, settings.unfinished, settings.flood
            ),
        )
        .line("Server", settings.launch.describe());
    if !limits.is_empty() {
        out.line("Server limits", limits_text(&limits));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(runtime: &str, lost: f64) -> FaultResult {
        FaultResult {
            runtime: runtime.to_owned(),
            store: "embedded".to_owned(),
            fault: "sigterm".to_owned(),
            errors_during: Some(lost),
            recover_s: Some(0.0),
            requests_lost: Some(lost),
            writes_lost: Some(0.0),
            restarts_needed: Some(0.0),
            p99_ms: None,
            unloaded_p99_ms: None,
            abusive_left_open: None,
            rss_mib: None,
            server_limits: None,
            notes: Vec::new(),
            seconds: Vec::new(),
            window: None,
        }
    }

    #[test]
    fn the_headline_says_what_the_table_says() {
        let clean = headline("sigterm", "hyper", "embedded", &[result("hyper", 0.0)]);
        assert!(
            clean.contains("0 requests lost, 0 acknowledged writes lost"),
            "{clean}"
        );
        let lossy = headline(
            "sigterm",
            "hyper, actix",
            "embedded",
            &[result("hyper", 10.0), result("actix", 14.0)],
        );
        assert!(
            lossy.contains(
                "24 requests lost (10 on hyper embedded sigterm, 14 on actix embedded sigterm)"
            ),
            "{lossy}"
        );
        assert!(!lossy.contains("nothing lost"), "{lossy}");
    }
}
