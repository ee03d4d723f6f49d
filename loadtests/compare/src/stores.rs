//! `brigade compare --stores memory,embedded,mongo`: the seed's with-and-without-a-database table
//! in one report. Each store gets a whole comparison of its own (isolated runs, side-by-side
//! levels and verdicts between the runtimes, written under `store-<name>/`), one store after
//! another on the same machine with the same runtimes, scenarios and user counts; then one report
//! sets every runtime's figures on each store against its figures in memory: "with a database the
//! services are N× slower" (the seed measured about 6×), per runtime, scenario and user count.
//!
//! The store ratios compare runs made minutes apart, not side by side: a store changes a request's
//! cost several-fold, far beyond the machine's drift between runs (±12% per second measured here),
//! so they are reported as measured and not judged; the runtime verdicts within each store are
//! each store's own comparison's.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use brigade_report::setup::Setup;
use brigade_report::study::{Better, Metric, Section, StudyReport, Table};
use brigade_report::{markdown, Report, Row};

/// The store every other is measured against.
pub(crate) const REFERENCE: &str = "memory";

/// One store's comparison, as the stores report keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoreRun {
    /// The store (`memory`, `embedded`, `mongo`).
    pub store: String,
    /// What serves it, in words (for mongo: the server its `buildInfo` names).
    pub server: String,
    /// The folder holding its whole comparison.
    pub folder: String,
}

/// One row of a store's table: a runtime's figures in one cell.
#[derive(Debug, Clone, Copy)]
struct Figures {
    hits_per_s: f64,
    cpu_us: f64,
    p99_ms: f64,
    error_pct: f64,
}

/// Every (runtime, scenario, users) of a report's rows with its figures.
fn figures(rows: &[Row]) -> BTreeMap<(String, String, u32), Figures> {
    rows.iter()
        .filter(|r| r.runs > r.failed_runs && r.hits_per_s > 0.0)
        .map(|r| {
            (
                (r.runtime.clone(), r.scenario.clone(), r.users),
                Figures {
                    hits_per_s: r.hits_per_s,
                    cpu_us: r.server_cpu_us_per_request,
                    p99_ms: r.p99_ms,
                    error_pct: r.error_pct,
                },
            )
        })
        .collect()
}

/// How many times slower `store`'s services are than in memory, median over every runtime,
/// scenario and user count both measured, with the range: `(median, low, high, cells)`.
pub(crate) fn slowdown(memory: &[Row], store: &[Row]) -> Option<(f64, f64, f64, usize)> {
    let base = figures(memory);
    let mut ratios: Vec<f64> = figures(store)
        .iter()
        .filter_map(|(key, f)| Some(base.get(key)?.hits_per_s / f.hits_per_s))
        .filter(|r| r.is_finite())
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let cells = ratios.len();
    Some((
        brigade_stats::median(&ratios),
        ratios[0],
        ratios[cells - 1],
        cells,
    ))
}

/// The sentence a store's slowdown makes.
fn slowdown_sentence(store: &StoreRun, memory: &[Row], rows: &[Row]) -> String {
    match slowdown(memory, rows) {
        Some((mid, low, high, cells)) => format!(
            "With the {} store ({}) the services answer {mid:.1}× fewer hits/s than in memory \
             (median of {cells} runtime × scenario × users cells, {low:.1}×–{high:.1}×).",
            store.store, store.server
        ),
        None => format!(
            "The {} store ({}) has no cell measured on both it and memory.",
            store.store, store.server
        ),
    }
}

/// The table of every runtime × scenario × users × store, each store against memory.
fn store_table(runs: &[(StoreRun, &[Row])]) -> Table {
    let mut table = Table::new(
        "Every store against memory (isolated runs, closed loop)",
        &["scenario", "users", "runtime", "store"],
        vec![
            Metric::new("throughput", "hits/s", Better::Higher, 1),
            Metric::new("slower than memory", "×", Better::Lower, 2),
            Metric::new("server CPU per request", "µs", Better::Lower, 1),
            Metric::new("CPU against memory", "×", Better::Lower, 2),
            Metric::new("p99", "ms", Better::Lower, 2),
            Metric::new("errors", "%", Better::Lower, 2),
        ],
    );
    let memory = runs
        .iter()
        .find(|(s, _)| s.store == REFERENCE)
        .map(|(_, rows)| figures(rows))
        .unwrap_or_default();
    let all: Vec<BTreeMap<(String, String, u32), Figures>> =
        runs.iter().map(|(_, rows)| figures(rows)).collect();
    let mut keys: Vec<(String, u32, String)> = all
        .iter()
        .flat_map(|m| m.keys())
        .map(|(runtime, scenario, users)| (scenario.clone(), *users, runtime.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    for (scenario, users, runtime) in keys {
        let key = (runtime.clone(), scenario.clone(), users);
        for ((store, _), figures) in runs.iter().zip(&all) {
            let Some(f) = figures.get(&key) else {
                continue;
            };
            let base = memory.get(&key);
            table.push(
                vec![
                    scenario.clone(),
                    users.to_string(),
                    runtime.clone(),
                    store.store.clone(),
                ],
                vec![
                    Some(f.hits_per_s),
                    base.map(|b| b.hits_per_s / f.hits_per_s),
                    Some(f.cpu_us),
                    base.filter(|b| b.cpu_us > 0.0).map(|b| f.cpu_us / b.cpu_us),
                    Some(f.p99_ms),
                    Some(f.error_pct),
                ],
            );
        }
    }
    table
}

/// The stores report from every store's comparison, in the order run.
pub(crate) fn report(
    runs: &[(StoreRun, Report)],
    setup: Setup,
    started_at: String,
    wall_s: f64,
) -> StudyReport {
    let memory = runs.iter().find(|(s, _)| s.store == REFERENCE);
    let mut headline: Vec<String> = Vec::new();
    if let Some((_, memory)) = memory {
        for (store, report) in runs.iter().filter(|(s, _)| s.store != REFERENCE) {
            headline.push(slowdown_sentence(store, &memory.rows, &report.rows));
        }
    } else {
        headline.push(
            "No run in memory: the stores are shown side by side without a reference.".to_owned(),
        );
    }
    let mut sections = vec![Section {
        title: "What a store costs".to_owned(),
        text: headline.clone(),
        tables: vec![store_table(
            &runs
                .iter()
                .map(|(s, r)| (s.clone(), r.rows.as_slice()))
                .collect::<Vec<_>>(),
        )],
        charts: Vec::new(),
    }];
    for (store, report) in runs {
        let mut text = vec![format!(
            "The {} store, served by {}: its whole comparison (isolated runs, side by side, \
             verdicts between the runtimes) is in {}/report.md.",
            store.store, store.server, store.folder
        )];
        text.extend(
            markdown::summary(report)
                .lines()
                .filter_map(|l| l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")))
                .map(str::to_owned),
        );
        sections.push(Section {
            title: format!("Store: {}", store.store),
            text,
            tables: Vec::new(),
            charts: Vec::new(),
        });
    }
    StudyReport {
        study: "compare --stores".to_owned(),
        title: "Brigade runtime comparison on every store".to_owned(),
        summary: format!(
            "One comparison per store ({}), the same runtimes, scenarios and user counts, one \
             store after another; every runtime's figures on each store set against memory. {}",
            runs.iter()
                .map(|(s, _)| s.store.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            headline.join(" ")
        ),
        started_at,
        wall_s,
        setup,
        notes: vec![
            "Store against memory compares runs made minutes apart (each store's comparison in \
             turn), not side by side: a database changes a request's cost several-fold, far \
             beyond the machine's drift between runs, so the ratios are shown as measured and \
             not judged. The runtime verdicts are each store's own comparison's."
                .to_owned(),
        ],
        sections,
    }
}

/// The folder of store `store`'s comparison under `out`.
pub(crate) fn folder(out: &Path, store: &str) -> std::path::PathBuf {
    out.join(format!("store-{store}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rows: &[(&str, &str, u32, f64, f64)]) -> Vec<Row> {
        rows.iter()
            .map(|&(runtime, scenario, users, hits, cpu)| Row {
                runtime: runtime.to_owned(),
                scenario: scenario.to_owned(),
                users,
                runs: 1,
                hits_per_s: hits,
                server_cpu_us_per_request: cpu,
                ..Row::default()
            })
            .collect()
    }

    #[test]
    fn a_store_is_so_many_times_slower_than_memory_by_the_median_of_its_cells() {
        let memory = rows(&[
            ("axum", "waiter", 10, 6000.0, 20.0),
            ("actix", "waiter", 10, 6600.0, 18.0),
            ("axum", "all", 10, 3000.0, 40.0),
        ]);
        let mongo = rows(&[
            ("axum", "waiter", 10, 1000.0, 120.0),
            ("actix", "waiter", 10, 1100.0, 110.0),
            ("axum", "all", 10, 300.0, 400.0),
            // Not measured in memory: left out of the ratio.
            ("hyper", "all", 10, 10.0, 1.0),
        ]);
        let (mid, low, high, cells) = slowdown(&memory, &mongo).unwrap();
        assert_eq!(cells, 3);
        assert!((mid - 6.0).abs() < 1e-9, "{mid}");
        assert!((low - 6.0).abs() < 1e-9 && (high - 10.0).abs() < 1e-9);
        let runs = vec![
            (
                StoreRun {
                    store: "memory".into(),
                    server: "in the process".into(),
                    folder: "store-memory".into(),
                },
                memory.as_slice(),
            ),
            (
                StoreRun {
                    store: "mongo".into(),
                    server: "FerretDB 1.24.2".into(),
                    folder: "store-mongo".into(),
                },
                mongo.as_slice(),
            ),
        ];
        let table = store_table(&runs);
        let at = [
            ("scenario", "all"),
            ("users", "10"),
            ("runtime", "axum"),
            ("store", "mongo"),
        ];
        assert_eq!(table.value(&at, "slower than memory"), Some(10.0));
        assert_eq!(table.value(&at, "CPU against memory"), Some(10.0));
        let memory_row = [
            ("scenario", "all"),
            ("users", "10"),
            ("runtime", "axum"),
            ("store", "memory"),
        ];
        assert_eq!(table.value(&memory_row, "slower than memory"), Some(1.0));
        let sentence = slowdown_sentence(&runs[1].0, runs[0].1, runs[1].1);
        assert!(
            sentence.contains("6.0× fewer") && sentence.contains("FerretDB 1.24.2"),
            "{sentence}"
        );
    }
}
