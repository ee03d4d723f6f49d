//! `brigade compare --baseline OLD/report.json`: this comparison set against a saved one by the
//! *ratios between runtimes*, the figures that noise cancels in: every judged comparison of this
//! report (a cell's best runtime against another, on efficiency or throughput) is matched with the
//! same cell and pair of the saved report, and the change of its ratio is judged by the verdicts'
//! three-way rule (its interval from both intervals, combined in log space). The runtimes' absolute
//! figures stand beside, marked as measured at another time: a machine drifts between two days far
//! more than two runtimes differ in one second, so absolutes are shown, never judged.

use std::path::Path;

use brigade_report::comparison::Comparison;
use brigade_report::verdict::{figure, Measure, Rule};
use brigade_report::{self as report, Report};

use brigade_report::baseline::{Baseline, Call, CellChange};

/// Reads the saved report at `path` (a `report.json`, or the folder holding one).
pub fn read(path: &Path) -> anyhow::Result<Report> {
    let file = if path.is_dir() {
        path.join("report.json")
    } else {
        path.to_path_buf()
    };
    report::json::read(&file)
}

/// `c`'s ratio and interval with `a` and `b` as given (flipped when the saved report had them the
/// other way round).
fn oriented(c: &Comparison, a: &str, b: &str) -> Option<(f64, f64, f64)> {
    let (r, lo, hi) = (c.ratio?, c.ci_low?, c.ci_high?);
    if c.a == a && c.b == b {
        Some((r, lo, hi))
    } else if c.a == b && c.b == a {
        Some((1.0 / r, 1.0 / hi, 1.0 / lo))
    } else {
        None
    }
}

/// The mean figure of `runtime` in the comparison's cell of `report`, in words.
fn absolute(report: &Report, c: &Comparison, runtime: &str) -> String {
    match c.measure {
        Measure::Efficiency => report
            .side_by_side
            .iter()
            .filter(|s| {
                s.scenario == c.scenario
                    && s.users == c.users
                    && s.preload == c.preload
                    && Some(&s.level) == c.level.as_ref()
            })
            .flat_map(|s| &s.runtimes)
            .find(|r| r.runtime == runtime)
            .map(|r| format!("{} µs", figure(r.cpu_us_per_request))),
        Measure::Throughput => report
            .rows
            .iter()
            .find(|r| {
                r.scenario == c.scenario
                    && r.users == c.users
                    && r.preload == c.preload
                    && r.runtime == runtime
            })
            .map(|r| format!("{}/s", figure(r.ok_per_s))),
        Measure::Capacity => report
            .slo_searches
            .iter()
            .find(|s| {
                s.scenario == c.scenario
                    && s.users == c.users
                    && s.preload == c.preload
                    && s.runtime == runtime
            })
            .and_then(|s| s.outcome.capacity_per_s)
            .map(|r| format!("{}/s", figure(r))),
    }
    .unwrap_or_else(|| "?".to_owned())
}

/// The change of `c`'s ratio against the same comparison `then` of the saved report.
fn change(c: &Comparison, then: &Comparison, absolute: String, rule: &Rule) -> CellChange {
    let mut change = CellChange {
        measure: c.measure,
        scenario: c.scenario.clone(),
        users: c.users,
        preload: c.preload,
        level: c.level.clone(),
        a: c.a.clone(),
        b: c.b.clone(),
        before: 0.0,
        after: c.ratio.unwrap_or(0.0),
        change_pct: 0.0,
        ci_pct: None,
        call: Call::NotJudged,
        absolute,
        reason: String::new(),
    };
    let (Some((r0, lo0, hi0)), Some(r1), Some(lo1), Some(hi1)) =
        (oriented(then, &c.a, &c.b), c.ratio, c.ci_low, c.ci_high)
    else {
        change.reason = "no interval on one side".to_owned();
        return change;
    };
    change.before = r0;
    // The change of ratio in log space: centre ln(r1/r0), half-width from both halves in
    // quadrature (the two comparisons were measured independently).
    let half = |lo: f64, hi: f64| (hi.ln() - lo.ln()) / 2.0;
    let centre = (r1 / r0).ln();
    let width = (half(lo0, hi0).powi(2) + half(lo1, hi1).powi(2)).sqrt();
    let interval = brigade_stats::Interval {
        ratio: centre.exp(),
        ci_low: (centre - width).exp(),
        ci_high: (centre + width).exp(),
        samples: c.samples,
        confidence: rule.confidence(),
    };
    let margin = rule.margin_pct(c.measure) / 100.0;
    let (outcome, _) = brigade_stats::four_way_oriented(&interval, margin);
    change.change_pct = (interval.ratio - 1.0) * 100.0;
    change.ci_pct = Some((
        (interval.ci_low - 1.0) * 100.0,
        (interval.ci_high - 1.0) * 100.0,
    ));
    change.call = match outcome {
        brigade_stats::Outcome::Win => Call::Changed,
        brigade_stats::Outcome::Equivalent => Call::Same,
        // The change's direction is known but it may be inside the margin: not a change that
        // matters, nor shown to be none.
        brigade_stats::Outcome::Ahead | brigade_stats::Outcome::Undecided => Call::Undecided,
        brigade_stats::Outcome::NotJudged => Call::NotJudged,
    };
    change.reason = format!(
        "{}'s lead over {} was {:+.1}%, is {:+.1}% ({:.0}% CI of the change {:+.1}…{:+.1}%, margin ±{:.0}%)",
        c.a,
        c.b,
        (r0 - 1.0) * 100.0,
        (r1 - 1.0) * 100.0,
        rule.confidence_pct,
        (interval.ci_low - 1.0) * 100.0,
        (interval.ci_high - 1.0) * 100.0,
        rule.margin_pct(c.measure)
    );
    if c.outcome == brigade_stats::Outcome::NotJudged
        || then.outcome == brigade_stats::Outcome::NotJudged
    {
        change.call = Call::NotJudged;
    }
    change
}

/// Sets `now` against `before` (read from `path`), comparison by comparison.
pub fn compare(now: &Report, before: &Report, path: &Path, rule: &Rule) -> Baseline {
    let mut cells = Vec::new();
    let mut missing = Vec::new();
    for c in &now.comparisons {
        let name = format!(
            "{:?} {} {} users{}: {} vs {}",
            c.measure,
            c.scenario,
            c.users,
            c.level
                .as_deref()
                .map(|l| format!(" at {l}"))
                .unwrap_or_default(),
            c.a,
            c.b
        )
        .to_lowercase();
        let same_pair = |t: &Comparison| (t.a == c.a && t.b == c.b) || (t.a == c.b && t.b == c.a);
        let Some(then) = before
            .comparisons
            .iter()
            .find(|t| t.same_cell(c) && same_pair(t))
        else {
            missing.push(name);
            continue;
        };
        let absolute = format!(
            "{}: {} then, {} now; {}: {} then, {} now (measured at another time)",
            c.a,
            absolute(before, then, &c.a),
            absolute(now, c, &c.a),
            c.b,
            absolute(before, then, &c.b),
            absolute(now, c, &c.b)
        );
        cells.push(change(c, then, absolute, rule));
    }
    Baseline {
        path: path.display().to_string(),
        started_at: before.started_at.clone(),
        machine: format!(
            "{} — {} ({} cores)",
            before.machine.hostname, before.machine.cpu, before.machine.cores
        ),
        cells,
        missing,
        differences: differences(now, before),
    }
}

/// The regressions against the baseline, one sentence each, the runtime named first: every cell
/// whose change is decided beyond the margin (`Call::Changed`), read as the runtime that fell
/// behind its partner — the trailing one when the best's lead grew, the best when its lead shrank
/// or turned. A cell's ratio is relative (both runtimes measured in the same windows), so "fell
/// behind" means against that partner; a runtime that fell behind in every regressed cell is the
/// one whose cost rose. Empty when nothing regressed.
pub fn regressions(baseline: &Baseline) -> Vec<String> {
    let regressed: Vec<&CellChange> = baseline
        .cells
        .iter()
        .filter(|c| c.call == Call::Changed)
        .collect();
    regressed
        .iter()
        .map(|c| {
            // A ratio above 1 means `a` better; its rise means `b` fell further behind.
            let (worse, partner) = if c.change_pct > 0.0 {
                (&c.b, &c.a)
            } else {
                (&c.a, &c.b)
            };
            let everywhere = regressed.iter().all(|o| o.a == *worse || o.b == *worse);
            let level = c
                .level
                .as_deref()
                .map(|l| format!(" at {l}"))
                .unwrap_or_default();
            format!(
                "{worse} fell behind {partner} on {} in {} at {} users{level}: {} ({}){}",
                match c.measure {
                    Measure::Efficiency => "CPU per request",
                    Measure::Throughput => "throughput",
                    Measure::Capacity => "capacity",
                },
                c.scenario,
                c.users,
                c.label(),
                c.reason,
                if everywhere && regressed.len() > 1 {
                    format!(", and {worse} is in every regressed cell")
                } else {
                    String::new()
                }
            )
        })
        .collect()
}

/// The settings that differ between the two comparisons, in words.
fn differences(now: &Report, before: &Report) -> Vec<String> {
    let (a, b) = (&now.settings, &before.settings);
    let mut out = Vec::new();
    let mut differ = |what: &str, now: String, then: String| {
        if now != then {
            out.push(format!("{what}: {now} now, {then} in the baseline"));
        }
    };
    differ("store", a.store.clone(), b.store.clone());
    differ(
        "measured seconds per run",
        figure(a.duration_s),
        figure(b.duration_s),
    );
    differ("repeats", a.repeat.to_string(), b.repeat.to_string());
    differ(
        "keep-alive",
        a.keepalive.to_string(),
        b.keepalive.to_string(),
    );
    differ("rate", format!("{:?}", a.rate), format!("{:?}", b.rate));
    differ(
        "machine",
        format!("{} ({} cores)", now.machine.cpu, now.machine.cores),
        format!("{} ({} cores)", before.machine.cpu, before.machine.cores),
    );
    differ(
        "CPUs (server / generator)",
        format!(
            "{:?} / {:?}",
            now.threads.cpus.server, now.threads.cpus.generator
        ),
        format!(
            "{:?} / {:?}",
            before.threads.cpus.server, before.threads.cpus.generator
        ),
    );
    differ(
        "brigade",
        now.versions.brigade.clone(),
        before.versions.brigade.clone(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(a: &str, b: &str, ratio: f64, half: f64) -> Comparison {
        Comparison {
            measure: Measure::Efficiency,
            scenario: "waiter".into(),
            users: 10,
            preload: 0,
            level: Some("40%".into()),
            rate_per_s: Some(1000.0),
            store: "embedded".into(),
            a: a.into(),
            b: b.into(),
            ratio: Some(ratio),
            ci_low: Some(ratio - half),
            ci_high: Some(ratio + half),
            confidence_pct: 95.0,
            margin_pct: 2.0,
            samples: 20,
            simultaneous: false,
            outcome: brigade_stats::Outcome::Win,
            reason: None,
            samples_to_decide: None,
            sentence: String::new(),
        }
    }

    #[test]
    fn a_ratio_that_held_is_the_same_and_one_that_moved_far_has_changed() {
        let rule = Rule::default();
        let before = comparison("hyper", "actix", 1.096, 0.005);
        let same = comparison("hyper", "actix", 1.094, 0.005);
        let moved = comparison("hyper", "actix", 1.20, 0.005);
        let c = change(&same, &before, String::new(), &rule);
        assert_eq!(c.call, Call::Same, "{c:?}");
        let c = change(&moved, &before, String::new(), &rule);
        assert_eq!(c.call, Call::Changed, "{c:?}");
        // The saved report had the pair the other way round: it is flipped, not missed.
        let flipped = comparison("actix", "hyper", 1.0 / 1.096, 0.004);
        assert!(oriented(&flipped, "hyper", "actix").is_some());
        let c = change(&same, &flipped, String::new(), &rule);
        assert_eq!(c.call, Call::Same, "{c:?}");
        // A wide interval on either side leaves the change undecided.
        let wide = comparison("hyper", "actix", 1.12, 0.06);
        assert_eq!(
            change(&wide, &before, String::new(), &rule).call,
            Call::Undecided
        );
        let other_pair = comparison("axum", "warp", 1.05, 0.01);
        assert!(oriented(&other_pair, "hyper", "actix").is_none());
    }
}
