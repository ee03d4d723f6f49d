//! One comparison in words, by any measure: the cell it belongs to ([`Key`]), what its interval
//! rests on ([`Basis`]), the four-way rule's outcome with the sentence a report prints, and a
//! cell's verdict from its comparisons.

use brigade_records::side::SideCell;
use brigade_report::comparison::Comparison;
use brigade_report::verdict::{Measure, Outcome, Rule, Verdict};
use brigade_stats::{Interval, Outcome as Four};

/// The cell key of a comparison, as the judge fills it in.
pub(super) struct Key<'a> {
    pub(super) scenario: &'a str,
    pub(super) users: u32,
    pub(super) preload: u64,
    pub(super) level: Option<&'a str>,
    pub(super) rate_per_s: Option<f64>,
    pub(super) store: &'a str,
}

impl<'a> Key<'a> {
    /// The key of a side-by-side level.
    pub(super) fn level(cell: &'a SideCell, store: &'a str) -> Key<'a> {
        Key {
            scenario: &cell.scenario,
            users: cell.users,
            preload: cell.preload,
            level: Some(&cell.level),
            rate_per_s: Some(cell.rate_per_s),
            store,
        }
    }

    /// The key of a cell judged as a whole (no side-by-side level).
    pub(super) fn cell(scenario: &'a str, users: u32, preload: u64, store: &'a str) -> Key<'a> {
        Key {
            scenario,
            users,
            preload,
            level: None,
            rate_per_s: None,
            store,
        }
    }
}

/// What an interval rests on: how many of what, and whether it holds with the cell's others.
#[derive(Debug, Clone, Copy)]
pub(super) struct Basis {
    /// How many samples per runtime.
    pub(super) samples: usize,
    /// What one is called (`rounds`, `windows`, `isolated runs`, `searches each`).
    pub(super) unit: &'static str,
    /// Whether the interval is simultaneous over the cell's comparisons.
    pub(super) simultaneous: bool,
}

impl Basis {
    /// The basis of an interval standing alone: its own sample count, in `unit`.
    pub(super) fn alone(interval: &Option<Interval>, unit: &'static str) -> Basis {
        Basis {
            samples: interval.map_or(0, |iv| iv.samples),
            unit,
            simultaneous: false,
        }
    }
}

/// `(1.096, 1.091, 1.101)` → `9.6% (95% CI 9.1–10.1%`.
fn pct_with_ci(iv: &Interval, confidence_pct: f64, simultaneous: bool) -> String {
    format!(
        "{:.1}% ({confidence_pct:.0}% {}CI {:.1}–{:.1}%",
        (iv.ratio - 1.0) * 100.0,
        if simultaneous { "simultaneous " } else { "" },
        (iv.ci_low - 1.0) * 100.0,
        (iv.ci_high - 1.0) * 100.0
    )
}

/// One comparison of `a` (better) with `b` from their interval, judged by the four-way rule.
pub(super) fn judged(
    measure: Measure,
    key: &Key<'_>,
    a: &str,
    b: &str,
    interval: Option<Interval>,
    basis: Basis,
    rule: &Rule,
) -> Comparison {
    let margin_pct = rule.margin_pct(measure);
    let margin = margin_pct / 100.0;
    let confidence_pct = interval.map_or(rule.confidence_pct, |iv| iv.confidence * 100.0);
    let mut comparison = Comparison {
        measure,
        scenario: key.scenario.to_owned(),
        users: key.users,
        preload: key.preload,
        level: key.level.map(str::to_owned),
        rate_per_s: key.rate_per_s,
        store: key.store.to_owned(),
        a: a.to_owned(),
        b: b.to_owned(),
        ratio: None,
        ci_low: None,
        ci_high: None,
        confidence_pct,
        margin_pct,
        samples: 0,
        simultaneous: basis.simultaneous,
        outcome: Four::NotJudged,
        reason: None,
        samples_to_decide: None,
        sentence: String::new(),
    };
    let Some(iv) = interval else {
        comparison.reason = Some("too few samples for an interval".to_owned());
        comparison.sentence = format!("{a} vs {b}: not judged, too few samples for an interval");
        return comparison;
    };
    comparison.ratio = Some(iv.ratio);
    comparison.ci_low = Some(iv.ci_low);
    comparison.ci_high = Some(iv.ci_high);
    comparison.samples = basis.samples;
    let how = pct_with_ci(&iv, confidence_pct, basis.simultaneous);
    let samples = format!("{} {}", basis.samples, basis.unit);
    let claim = claim(measure, a, b, &how, &samples);
    comparison.outcome = brigade_stats::four_way(&iv, margin);
    comparison.sentence = match comparison.outcome {
        Four::Win => claim,
        Four::Ahead => {
            format!("{claim}: the order is known, the difference may be inside the ±{margin_pct:.0}% margin")
        }
        Four::Equivalent => {
            format!("{a} and {b} are equivalent: {claim}, inside the ±{margin_pct:.0}% margin")
        }
        _ => {
            comparison.samples_to_decide = brigade_stats::samples_to_decide(&iv, margin);
            let more = what_would_decide(basis.unit, comparison.samples_to_decide);
            format!("undecided: {claim}, the interval holds no difference and crosses the ±{margin_pct:.0}% margin{more}")
        }
    };
    comparison
}

/// What a comparison says `a` does better than `b`, by `how` much over `samples`.
fn claim(measure: Measure, a: &str, b: &str, how: &str, samples: &str) -> String {
    match measure {
        Measure::Efficiency => {
            format!("{b} spends {how}, {samples}) more CPU per request than {a}")
        }
        Measure::Throughput => {
            format!("{a} answers {how}, {samples}) more successful hits/s than {b}")
        }
        Measure::Capacity => {
            format!("{a} holds {how}, {samples}) more requests/s than {b} within the SLO")
        }
    }
}

/// The tail of an undecided sentence: how many samples would likely decide it, if any would.
fn what_would_decide(unit: &str, samples_to_decide: Option<usize>) -> String {
    match samples_to_decide {
        Some(n) => format!("; about {n} {unit} in all would likely decide it"),
        None => "; more samples are unlikely to decide it".to_owned(),
    }
}

/// A comparison that could not be judged, for `reason`.
pub(super) fn not_judged(
    measure: Measure,
    key: &Key<'_>,
    a: &str,
    b: &str,
    reason: &str,
    rule: &Rule,
) -> Comparison {
    let mut c = judged(measure, key, a, b, None, Basis::alone(&None, ""), rule);
    c.reason = Some(reason.to_owned());
    c.sentence = format!("{a} vs {b}: not judged, {reason}");
    c
}

/// The comparisons as the roll-up reads them.
pub(super) fn as_judged(comparisons: &[Comparison]) -> Vec<brigade_stats::Judged> {
    comparisons
        .iter()
        .map(|c| brigade_stats::Judged {
            a: c.a.clone(),
            b: c.b.clone(),
            outcome: c.outcome,
        })
        .collect()
}

/// The verdict of a cell that cannot be judged: for `reason`, with no comparison, or with one not
/// judged; None when the cell can be judged.
fn unjudged_verdict(comparisons: &[Comparison], reason: Option<&str>) -> Option<Verdict> {
    if let Some(reason) = reason {
        let outcome = if reason.starts_with("generator-bound") {
            Outcome::GeneratorBound
        } else if reason.starts_with("contended") {
            Outcome::Contended
        } else {
            Outcome::NotJudged
        };
        return Some(Verdict {
            outcome,
            reason: format!("no verdict: {reason}"),
        });
    }
    if comparisons.is_empty() {
        return Some(Verdict {
            outcome: Outcome::NoData,
            reason: "fewer than two runtimes produced figures; nothing to compare".to_owned(),
        });
    }
    comparisons
        .iter()
        .find(|c| c.outcome == Four::NotJudged)
        .map(|c| Verdict {
            outcome: Outcome::NoData,
            reason: c.sentence.clone(),
        })
}

/// A cell's verdict from its comparisons (each `a` is the cell's best runtime), by the one rule
/// of [`brigade_stats::leader`]: open while a comparison is undecided; else the leading group
/// (equivalent), or the best alone — a winner when every other trails beyond the margin, a
/// leader when the order is known but some trail inside it.
pub(super) fn cell_verdict(comparisons: &[Comparison], not_judged_reason: Option<&str>) -> Verdict {
    if let Some(verdict) = unjudged_verdict(comparisons, not_judged_reason) {
        return verdict;
    }
    let reason = comparisons
        .iter()
        .map(|c| c.sentence.clone())
        .collect::<Vec<_>>()
        .join("; ");
    let Some(leader) = brigade_stats::leader(&as_judged(comparisons)) else {
        return Verdict {
            outcome: Outcome::NoData,
            reason,
        };
    };
    if !leader.decided {
        let mut leaders = leader.runtimes;
        leaders.extend(leader.open);
        return Verdict {
            outcome: Outcome::Undecided { leaders },
            reason,
        };
    }
    if leader.runtimes.len() > 1 {
        return Verdict {
            outcome: Outcome::Equivalent {
                leaders: leader.runtimes,
            },
            reason,
        };
    }
    // The best alone: the runner-up is the closest.
    let runner_up = comparisons
        .iter()
        .min_by(|x, y| x.ratio.unwrap_or(1.0).total_cmp(&y.ratio.unwrap_or(1.0)))
        .unwrap_or(&comparisons[0]);
    let (runtime, runner_up, margin_pct) = (
        runner_up.a.clone(),
        runner_up.b.clone(),
        (runner_up.ratio.unwrap_or(1.0) - 1.0) * 100.0,
    );
    let outcome = if comparisons.iter().all(|c| c.outcome == Four::Win) {
        Outcome::Winner {
            runtime,
            runner_up,
            margin_pct,
        }
    } else {
        Outcome::Leads {
            runtime,
            runner_up,
            margin_pct,
        }
    };
    Verdict { outcome, reason }
}
