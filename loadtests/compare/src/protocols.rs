//! `brigade compare --protocols h1,h2c,h1-tls,h2-tls`: what the wire protocol costs each runtime.
//! Each protocol gets a whole comparison of its own (servers started to speak it, every load
//! speaking it; isolated runs, side-by-side levels and verdicts between the runtimes, written
//! under `protocol-<name>/`), one protocol after another with the same runtimes, scenarios and
//! user counts; then one report sets every runtime's figures over each protocol beside its
//! figures over plaintext HTTP/1.1: side-by-side CPU per request (and that figure ÷ h1's), the
//! side-by-side efficiency standing, closed-loop hits/s and p99 from the isolated runs, errors.
//!
//! As with `--stores`, a protocol against h1 compares runs made minutes apart, so those ratios are
//! shown as measured and not judged; the runtime verdicts are each protocol's own comparison's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use brigade_records::protocol::Protocol;
use serde::{Deserialize, Serialize};

use brigade_report::setup::Setup;
use brigade_report::study::{Better, Metric, Section, StudyReport, Table};
use brigade_report::verdict::{Outcome, Verdict};
use brigade_report::{markdown, Report};

/// The protocol every other is measured against, when it was run; else the first one run
/// (`--protocols h2-tls,h3`: h3 against h2-tls), see [`reference_of`].
pub(crate) const REFERENCE: Protocol = Protocol::H1;

/// The protocol the others are set against: [`REFERENCE`] if it was run, else the first run.
fn reference_of<T>(all: &[(Protocol, T)]) -> Option<Protocol> {
    all.iter()
        .find(|(p, _)| *p == REFERENCE)
        .or_else(|| all.first())
        .map(|(p, _)| *p)
}

/// One protocol's comparison, as the protocols report keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProtocolRun {
    /// The protocol.
    pub protocol: Protocol,
    /// The folder holding its whole comparison.
    pub folder: String,
}

/// The folder of protocol `protocol`'s comparison under `out`.
pub(crate) fn folder(out: &Path, protocol: Protocol) -> PathBuf {
    out.join(folder_name(protocol))
}

/// `protocol-h2-tls`.
fn folder_name(protocol: Protocol) -> String {
    format!("protocol-{protocol}")
}

/// A row's key: scenario (with its preload when there is one), users, runtime.
type Key = (String, u32, String);

/// One runtime's figures in one cell of one protocol's comparison.
#[derive(Debug, Clone, Default, PartialEq)]
struct Figures {
    /// Side-by-side server CPU µs per request, median over the cell's levels.
    side_cpu_us: Option<f64>,
    /// Where the side-by-side efficiency verdict of the cell puts it.
    standing: String,
    /// Isolated closed-loop hits/s.
    hits_per_s: Option<f64>,
    /// Isolated p99, ms.
    p99_ms: Option<f64>,
    /// Failed requests, percent: isolated and side by side together.
    error_pct: Option<f64>,
}

/// `waiter`, or `waiter (preload 1000)`.
fn scenario_label(scenario: &str, preload: u64) -> String {
    if preload == 0 {
        scenario.to_owned()
    } else {
        format!("{scenario} (preload {preload})")
    }
}

/// Where `verdict` puts `runtime`: `best`, `behind axum`, `equivalent`, `undecided`, or the
/// verdict's own label when it ranks nobody.
pub(crate) fn standing(verdict: Option<&Verdict>, runtime: &str) -> String {
    let Some(verdict) = verdict else {
        return "not measured".to_owned();
    };
    match &verdict.outcome {
        Outcome::Winner {
            runtime: best,
            margin_pct,
            ..
        } if best == runtime => format!("best (+{margin_pct:.1}%)"),
        Outcome::Winner { runtime: best, .. } => format!("behind {best}"),
        Outcome::Equivalent { leaders } | Outcome::Undecided { leaders }
            if !leaders.iter().any(|l| l == runtime) =>
        {
            format!("behind {}", leaders.join("≈"))
        }
        Outcome::Equivalent { .. } => "equivalent".to_owned(),
        Outcome::Undecided { .. } => "undecided".to_owned(),
        _ => verdict.label(),
    }
}

/// Every runtime's figures in every cell of one comparison.
fn figures(report: &Report) -> BTreeMap<Key, Figures> {
    let mut out: BTreeMap<Key, Figures> = BTreeMap::new();
    let mut side: BTreeMap<Key, (Vec<f64>, u64, u64)> = BTreeMap::new();
    for cell in &report.side_by_side {
        for r in &cell.runtimes {
            let key = (
                scenario_label(&cell.scenario, cell.preload),
                cell.users,
                r.runtime.clone(),
            );
            let entry = side.entry(key).or_default();
            if r.requests > 0 && r.cpu_us_per_request > 0.0 {
                entry.0.push(r.cpu_us_per_request);
            }
            entry.1 += r.requests;
            entry.2 += r.errors;
        }
    }
    for row in report.rows.iter().filter(|r| r.runs > r.failed_runs) {
        let key = (
            scenario_label(&row.scenario, row.preload),
            row.users,
            row.runtime.clone(),
        );
        let f = out.entry(key).or_default();
        f.hits_per_s = Some(row.hits_per_s);
        f.p99_ms = Some(row.p99_ms);
        f.error_pct = Some(row.error_pct);
    }
    for (key, (cpus, requests, errors)) in side {
        let f = out.entry(key).or_default();
        f.side_cpu_us = (!cpus.is_empty()).then(|| brigade_stats::median(&cpus));
        if f.error_pct.is_none() && requests > 0 {
            f.error_pct = Some(errors as f64 * 100.0 / requests as f64);
        }
    }
    for cell in &report.cells {
        let scenario = scenario_label(&cell.scenario, cell.preload);
        for ((s, users, runtime), f) in out.iter_mut() {
            if *s == scenario && *users == cell.users {
                f.standing = standing(cell.efficiency.as_ref(), runtime);
            }
        }
    }
    out
}

/// The table of every scenario × users × runtime × protocol, each protocol against the
/// reference ([`reference_of`]: h1 when it was run).
fn protocol_table(all: &[(Protocol, BTreeMap<Key, Figures>)]) -> Table {
    let base = reference_of(all).unwrap_or(REFERENCE);
    let against = format!("CPU against {base}");
    let mut table = Table::new(
        &format!("Every protocol against {base}"),
        &["scenario", "users", "runtime", "protocol", "efficiency"],
        vec![
            Metric::new(
                "server CPU per request, side by side",
                "µs",
                Better::Lower,
                1,
            ),
            Metric::new(&against, "×", Better::Lower, 2),
            Metric::new("throughput, isolated", "hits/s", Better::Higher, 1),
            Metric::new("p99, isolated", "ms", Better::Lower, 2),
            Metric::new("errors", "%", Better::Lower, 2),
        ],
    );
    let reference = all
        .iter()
        .find(|(p, _)| *p == base)
        .map(|(_, f)| f.clone())
        .unwrap_or_default();
    let mut keys: Vec<&Key> = all.iter().flat_map(|(_, f)| f.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        for (protocol, figures) in all {
            let Some(f) = figures.get(key) else {
                continue;
            };
            let (scenario, users, runtime) = key;
            table.push(
                vec![
                    scenario.clone(),
                    users.to_string(),
                    runtime.clone(),
                    protocol.to_string(),
                    f.standing.clone(),
                ],
                vec![
                    f.side_cpu_us,
                    cpu_ratio(f, reference.get(key)),
                    f.hits_per_s,
                    f.p99_ms,
                    f.error_pct,
                ],
            );
        }
    }
    table
}

/// A cell's side-by-side CPU per request ÷ the same runtime's over the reference protocol.
fn cpu_ratio(f: &Figures, h1: Option<&Figures>) -> Option<f64> {
    let base = h1?.side_cpu_us.filter(|&b| b > 0.0)?;
    Some(f.side_cpu_us? / base)
}

/// The sentence one protocol's figures make, against the reference's (`base`, h1 when run).
fn protocol_sentence(
    protocol: Protocol,
    figures: &BTreeMap<Key, Figures>,
    base: Protocol,
    h1: Option<&BTreeMap<Key, Figures>>,
) -> String {
    let errors: f64 = figures
        .values()
        .filter_map(|f| f.error_pct)
        .fold(0.0, f64::max);
    let errors = if errors > 0.0 {
        format!(" Errors up to {errors:.2}% of requests in a cell.")
    } else {
        " No errors.".to_owned()
    };
    let Some(h1) = h1.filter(|_| protocol != base) else {
        return format!(
            "Over {protocol}{}: {} runtime × scenario × users cell(s) measured.{errors}",
            if protocol == base {
                " (the reference)"
            } else {
                ""
            },
            figures.len()
        );
    };
    let ratios: Vec<f64> = figures
        .iter()
        .filter_map(|(key, f)| cpu_ratio(f, h1.get(key)))
        .filter(|r| r.is_finite())
        .collect();
    let hits: Vec<f64> = figures
        .iter()
        .filter_map(|(key, f)| Some(f.hits_per_s? / h1.get(key)?.hits_per_s.filter(|&h| h > 0.0)?))
        .filter(|r| r.is_finite())
        .collect();
    let cpu = match spread(&ratios) {
        Some((mid, low, high)) => format!(
            "the runtimes spend {mid:.2}× the server CPU per request they spend over {base}, side \
             by side (median of {} cells, {low:.2}×–{high:.2}×)",
            ratios.len()
        ),
        None => format!("no cell has side-by-side CPU per request over both it and {base}"),
    };
    let throughput = match spread(&hits) {
        Some((mid, low, high)) => {
            format!("; closed-loop hits/s are {mid:.2}× {base}'s ({low:.2}×–{high:.2}×)")
        }
        None => String::new(),
    };
    format!("Over {protocol} {cpu}{throughput}.{errors}")
}

/// The median, lowest and highest of `values`, if any.
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some((
        brigade_stats::median(&sorted),
        *sorted.first()?,
        *sorted.last()?,
    ))
}

/// The section of one protocol: where its comparison is, and its summary's lines.
fn protocol_section(run: &ProtocolRun, report: &Report) -> Section {
    let mut text = vec![format!(
        "Over {}: its whole comparison (isolated runs, side by side, verdicts between the \
         runtimes) is in {}/report.md.",
        run.protocol, run.folder
    )];
    text.extend(
        markdown::summary(report)
            .lines()
            .filter_map(|l| l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")))
            .map(str::to_owned),
    );
    Section {
        title: format!("Protocol: {}", run.protocol),
        text,
        tables: Vec::new(),
        charts: Vec::new(),
    }
}

/// The protocols report from every protocol's comparison, in the order run.
pub(crate) fn report(
    runs: &[(ProtocolRun, Report)],
    setup: Setup,
    started_at: String,
    wall_s: f64,
) -> StudyReport {
    let all: Vec<(Protocol, BTreeMap<Key, Figures>)> = runs
        .iter()
        .map(|(run, report)| (run.protocol, figures(report)))
        .collect();
    let base = reference_of(&all).unwrap_or(REFERENCE);
    let h1 = all.iter().find(|(p, _)| *p == base).map(|(_, f)| f);
    let headline: Vec<String> = all
        .iter()
        .map(|(protocol, figures)| protocol_sentence(*protocol, figures, base, h1))
        .collect();
    let mut sections = vec![Section {
        title: "What a protocol costs".to_owned(),
        text: headline.clone(),
        tables: vec![protocol_table(&all)],
        charts: Vec::new(),
    }];
    sections.extend(
        runs.iter()
            .map(|(run, report)| protocol_section(run, report)),
    );
    let names: Vec<&str> = runs.iter().map(|(r, _)| r.protocol.name()).collect();
    StudyReport {
        study: "compare --protocols".to_owned(),
        title: "Brigade runtime comparison over every protocol".to_owned(),
        summary: format!(
            "One comparison per protocol ({}), the same runtimes, scenarios and user counts, one \
             protocol after another; every runtime's figures over each protocol set against {base}. {}",
            names.join(", "),
            headline.join(" ")
        ),
        started_at,
        wall_s,
        setup,
        notes: vec![
            format!(
                "A protocol against {base} compares runs made minutes apart (each protocol's \
                 comparison in turn), not side by side, so the ratios are shown as measured and \
                 not judged. The efficiency standings are each protocol's own side-by-side \
                 verdicts. A runtime that does not offer a protocol (h3 on actix-web, ntex, \
                 xitca-web) has no row for it."
            ),
        ],
        sections,
    }
}

/// The protocol run of `protocol`, its folder named under the report.
pub(crate) fn run_of(protocol: Protocol) -> ProtocolRun {
    ProtocolRun {
        protocol,
        folder: folder_name(protocol),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures_of(cpu: f64, hits: f64) -> BTreeMap<Key, Figures> {
        BTreeMap::from([(
            ("waiter".to_owned(), 10, "axum".to_owned()),
            Figures {
                side_cpu_us: Some(cpu),
                standing: "best (+3.0%)".to_owned(),
                hits_per_s: Some(hits),
                p99_ms: Some(1.0),
                error_pct: Some(0.0),
            },
        )])
    }

    #[test]
    fn a_protocol_is_set_against_the_same_runtimes_h1_figures() {
        let all = vec![
            (Protocol::H1, figures_of(20.0, 6000.0)),
            (Protocol::H2Tls, figures_of(30.0, 4500.0)),
        ];
        let table = protocol_table(&all);
        let at = |p: &'static str| {
            [
                ("scenario", "waiter"),
                ("users", "10"),
                ("runtime", "axum"),
                ("protocol", p),
            ]
        };
        assert_eq!(table.value(&at("h2-tls"), "CPU against h1"), Some(1.5));
        assert_eq!(table.value(&at("h1"), "CPU against h1"), Some(1.0));
        let sentence = protocol_sentence(Protocol::H2Tls, &all[1].1, Protocol::H1, Some(&all[0].1));
        assert!(
            sentence.contains("1.50× the server CPU") && sentence.contains("0.75× h1's"),
            "{sentence}"
        );
    }

    #[test]
    fn without_h1_the_first_protocol_run_is_the_reference() {
        let all = vec![
            (Protocol::H2Tls, figures_of(20.0, 6000.0)),
            (Protocol::H3, figures_of(30.0, 4500.0)),
        ];
        let table = protocol_table(&all);
        let at = [
            ("scenario", "waiter"),
            ("users", "10"),
            ("runtime", "axum"),
            ("protocol", "h3"),
        ];
        assert_eq!(table.value(&at, "CPU against h2-tls"), Some(1.5));
    }

    #[test]
    fn a_verdict_places_every_runtime() {
        let winner = Verdict {
            outcome: Outcome::Winner {
                runtime: "axum".into(),
                runner_up: "hyper".into(),
                margin_pct: 4.0,
            },
            reason: String::new(),
        };
        assert_eq!(standing(Some(&winner), "axum"), "best (+4.0%)");
        assert_eq!(standing(Some(&winner), "hyper"), "behind axum");
        let tied = Verdict {
            outcome: Outcome::Equivalent {
                leaders: vec!["axum".into(), "hyper".into()],
            },
            reason: String::new(),
        };
        assert_eq!(standing(Some(&tied), "hyper"), "equivalent");
        assert_eq!(standing(Some(&tied), "third"), "behind axum≈hyper");
        assert_eq!(standing(None, "third"), "not measured");
    }
}
