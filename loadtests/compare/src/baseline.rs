//! `brigade compare --baseline OLD/report.json`: this comparison set against a saved one by the
//! *ratios between runtimes*, the figures that noise cancels in: every judged comparison of this
//! report (a cell's best runtime against another, on efficiency or throughput) is matched with the
//! same cell and pair of the saved report, and the change of its ratio is judged by the verdicts'
//! three-way rule (its interval from both intervals, combined in log space). The runtimes' absolute
//! figures stand beside, marked as measured at another time: a machine drifts between two days far
//! more than two runtimes differ in one second, so absolutes are shown, never judged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use brigade_report::comparison::Comparison;
use brigade_report::verdict::{figure, Measure, Rule};
use brigade_report::{self as report, Report};
use brigade_stats::Scatter;

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

/// `report` set against the saved reports at `paths` (none: `report` as it is).
pub fn against(report: Report, paths: &[PathBuf], rule: &Rule) -> anyhow::Result<Report> {
    if paths.is_empty() {
        return Ok(report);
    }
    let before = paths
        .iter()
        .map(|path| {
            let saved = read(path).with_context(|| format!("--baseline {}", path.display()))?;
            Ok((path.clone(), saved))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let baseline = compare(&report, &before, rule);
    Ok(report.with_baseline(Some(baseline)))
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

/// Each comparison's change is judged at the confidence that holds over all of them at once: a
/// gate asks every cell at the same time.
struct Family {
    /// The confidence each comparison is judged at.
    member: f64,
    /// How many comparisons were judged.
    size: usize,
}

/// The interval of `c`'s change against its earlier runs' oriented ratios `olds` (ratio, low,
/// high), in log space: where earlier runs measured the pair's scatter, a prediction interval
/// from it; otherwise the two runs' intervals in quadrature (measured independently), widened to
/// the family's confidence. None without an interval on one side.
fn interval_of_change(
    c: &Comparison,
    olds: &[(f64, f64, f64)],
    scatter: &Scatter,
    family: &Family,
    rule: &Rule,
) -> Option<brigade_stats::Interval> {
    let (&(r0, lo0, hi0), r1, lo1, hi1) = (olds.first()?, c.ratio?, c.ci_low?, c.ci_high?);
    let logs: Vec<f64> = olds.iter().map(|(r, _, _)| r.ln()).collect();
    let half = |lo: f64, hi: f64| (hi.ln() - lo.ln()) / 2.0;
    let (centre, width) =
        match brigade_stats::predicted_change(r1.ln(), &logs, scatter, family.member) {
            Some(predicted) => predicted,
            None => (
                (r1 / r0).ln(),
                brigade_stats::widened(
                    half(lo0, hi0).hypot(half(lo1, hi1)),
                    rule.confidence(),
                    family.member,
                ),
            ),
        };
    Some(brigade_stats::Interval {
        ratio: centre.exp(),
        ci_low: (centre - width).exp(),
        ci_high: (centre + width).exp(),
        samples: c.samples,
        confidence: family.member,
    })
}

/// The change of `c`'s ratio against the same comparison in each earlier run (`then`, never
/// empty; `olds`: their ratios and intervals oriented as `c`), with the run-to-run `scatter` of
/// its pair measured over those runs.
fn change(
    c: &Comparison,
    then: &[&Comparison],
    olds: &[(f64, f64, f64)],
    scatter: &Scatter,
    family: &Family,
    absolute: String,
    rule: &Rule,
) -> CellChange {
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
    if !olds.is_empty() {
        change.before =
            (olds.iter().map(|(r, _, _)| r.ln()).sum::<f64>() / olds.len() as f64).exp();
    }
    let Some(interval) = interval_of_change(c, olds, scatter, family, rule) else {
        change.reason = "no interval on one side".to_owned();
        return change;
    };
    let basis = match olds.len() {
        1 => "one run".to_owned(),
        k => format!("the mean of {k} runs"),
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
        "{}'s lead over {} was {:+.1}% ({basis}), is {:+.1}% ({:.0}% CI of the change, \
         simultaneous over {} comparisons: {:+.1}…{:+.1}%, margin ±{:.0}%)",
        c.a,
        c.b,
        (change.before - 1.0) * 100.0,
        (change.after - 1.0) * 100.0,
        rule.confidence_pct,
        family.size,
        (interval.ci_low - 1.0) * 100.0,
        (interval.ci_high - 1.0) * 100.0,
        rule.margin_pct(c.measure)
    );
    if c.outcome == brigade_stats::Outcome::NotJudged
        || then
            .iter()
            .all(|t| t.outcome == brigade_stats::Outcome::NotJudged)
    {
        change.call = Call::NotJudged;
    }
    change
}

/// `c`'s cell and runtimes in words, for the comparisons an earlier run does not have.
fn name(c: &Comparison) -> String {
    format!(
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
    .to_lowercase()
}

/// The pair of runtimes and the measure whose run-to-run scatter `c` shares.
fn pair(c: &Comparison) -> (String, String, String) {
    let (x, y) = if c.a <= c.b {
        (&c.a, &c.b)
    } else {
        (&c.b, &c.a)
    };
    (format!("{:?}", c.measure), x.clone(), y.clone())
}

/// Comparisons, each with the earlier runs' reports and their comparisons of its cell and pair.
type Matched<'a> = Vec<(&'a Comparison, Vec<(&'a Report, &'a Comparison)>)>;

/// Each comparison of `now` with each earlier run's report and its comparison of the same cell
/// and pair (those that have one), and the comparisons no earlier run has, in words.
fn matched<'a>(now: &'a Report, before: &'a [(PathBuf, Report)]) -> (Matched<'a>, Vec<String>) {
    let mut matched = Vec::new();
    let mut missing = Vec::new();
    for c in &now.comparisons {
        let same_pair = |t: &Comparison| (t.a == c.a && t.b == c.b) || (t.a == c.b && t.b == c.a);
        let then: Vec<(&Report, &Comparison)> = before
            .iter()
            .filter_map(|(_, r)| {
                r.comparisons
                    .iter()
                    .find(|t| t.same_cell(c) && same_pair(t))
                    .map(|t| (r, t))
            })
            .collect();
        if then.is_empty() {
            missing.push(name(c));
        } else {
            matched.push((c, then));
        }
    }
    (matched, missing)
}

/// Sets `now` against the earlier runs `before` (each read from its path), comparison by
/// comparison: each comparison against the mean of the runs that have it, judged by a prediction
/// interval from their run-to-run scatter when two or more do (`brigade_stats::predicted_change`),
/// every comparison at the confidence that holds for all at once.
pub fn compare(now: &Report, before: &[(PathBuf, Report)], rule: &Rule) -> Baseline {
    let (matched, missing) = matched(now, before);
    // Each comparison's earlier ratios and intervals, oriented as it is.
    let olds: Vec<Vec<(f64, f64, f64)>> = matched
        .iter()
        .map(|(c, then)| {
            then.iter()
                .filter_map(|(_, t)| oriented(t, &c.a, &c.b))
                .collect()
        })
        .collect();
    let mut scatter: BTreeMap<_, Scatter> = BTreeMap::new();
    for ((c, _), olds) in matched.iter().zip(&olds) {
        let logs: Vec<f64> = olds.iter().map(|(r, _, _)| r.ln()).collect();
        scatter.entry(pair(c)).or_default().add(&logs);
    }
    let judged =
        |c: &Comparison| c.ratio.is_some() && c.outcome != brigade_stats::Outcome::NotJudged;
    let size = matched.iter().filter(|(c, _)| judged(c)).count();
    let family = Family {
        member: brigade_stats::per_member(rule.confidence(), size),
        size,
    };
    let cells = matched
        .iter()
        .zip(&olds)
        .map(|((c, then), olds)| {
            let (latest, newest) = *then.last().expect("matched in one run at least");
            let absolute = format!(
                "{}: {} then, {} now; {}: {} then, {} now (measured at another time)",
                c.a,
                absolute(latest, newest, &c.a),
                absolute(now, c, &c.a),
                c.b,
                absolute(latest, newest, &c.b),
                absolute(now, c, &c.b)
            );
            let then: Vec<&Comparison> = then.iter().map(|(_, t)| *t).collect();
            change(c, &then, olds, &scatter[&pair(c)], &family, absolute, rule)
        })
        .collect();
    let mut said = Vec::new();
    for d in before.iter().flat_map(|(_, r)| differences(now, r)) {
        if !said.contains(&d) {
            said.push(d);
        }
    }
    let (_, latest) = before.last().expect("at least one earlier run");
    Baseline {
        path: before
            .iter()
            .map(|(p, _)| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        started_at: before
            .iter()
            .map(|(_, r)| r.started_at.clone())
            .collect::<Vec<_>>()
            .join(", "),
        machine: format!(
            "{} — {} ({} cores)",
            latest.machine.hostname, latest.machine.cpu, latest.machine.cores
        ),
        cells,
        missing,
        differences: said,
        basis: basis(before.len(), &family, rule),
    }
}

/// How the changes were judged, in words, for `runs` earlier runs.
fn basis(runs: usize, family: &Family, rule: &Rule) -> String {
    let each = format!(
        "at {:.2}% for each of the {} comparisons, so that {:.0}% holds for all of them at once \
         (Bonferroni)",
        family.member * 100.0,
        family.size,
        rule.confidence_pct
    );
    if runs > 1 {
        format!(
            "Against {runs} earlier runs, each comparison against their mean: the change's \
             interval is a prediction interval from how much those runs scattered (pooled per pair \
             of runtimes over the cells, Student's t), {each}."
        )
    } else {
        format!(
            "Against one earlier run: the change's interval combines the two runs' intervals, \
             {each}. One earlier run cannot show how far runs scatter beyond their own intervals \
             (a run's rounds share the machine's state and the rate its probes chose): give \
             --baseline two or more earlier runs for a gate."
        )
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

    /// One comparison, judged alone (a family of one), against the given earlier runs.
    fn judge(now: &Comparison, then: &[&Comparison], scatter: &Scatter) -> CellChange {
        let rule = Rule::default();
        let family = Family {
            member: rule.confidence(),
            size: 1,
        };
        let olds: Vec<_> = then
            .iter()
            .filter_map(|t| oriented(t, &now.a, &now.b))
            .collect();
        change(now, then, &olds, scatter, &family, String::new(), &rule)
    }

    #[test]
    fn a_ratio_that_held_is_the_same_and_one_that_moved_far_has_changed() {
        let none = Scatter::default();
        let before = comparison("hyper", "actix", 1.096, 0.005);
        let same = comparison("hyper", "actix", 1.094, 0.005);
        let moved = comparison("hyper", "actix", 1.20, 0.005);
        let c = judge(&same, &[&before], &none);
        assert_eq!(c.call, Call::Same, "{c:?}");
        let c = judge(&moved, &[&before], &none);
        assert_eq!(c.call, Call::Changed, "{c:?}");
        assert!(c.reason.contains("(one run)"), "{}", c.reason);
        // The saved report had the pair the other way round: it is flipped, not missed.
        let flipped = comparison("actix", "hyper", 1.0 / 1.096, 0.004);
        assert!(oriented(&flipped, "hyper", "actix").is_some());
        let c = judge(&same, &[&flipped], &none);
        assert_eq!(c.call, Call::Same, "{c:?}");
        // A wide interval on either side leaves the change undecided.
        let wide = comparison("hyper", "actix", 1.12, 0.06);
        assert_eq!(judge(&wide, &[&before], &none).call, Call::Undecided);
        let other_pair = comparison("axum", "warp", 1.05, 0.01);
        assert!(oriented(&other_pair, "hyper", "actix").is_none());
    }

    #[test]
    fn against_several_runs_a_move_inside_their_scatter_is_no_change_and_one_beyond_it_is() {
        // Three earlier runs whose narrow intervals (±0.5%) do not cover how far they scatter
        // between runs (1.10, 1.14, 1.18): a run at 1.17 moved 3% from the first run alone, beyond
        // both intervals, but not beyond how the runs scatter.
        let runs: Vec<Comparison> = [1.10, 1.14, 1.18]
            .iter()
            .map(|&r| comparison("hyper", "ntex", r, 0.005))
            .collect();
        let then: Vec<&Comparison> = runs.iter().collect();
        let now = comparison("hyper", "ntex", 1.17, 0.005);
        assert_eq!(
            judge(&now, &then[..1], &Scatter::default()).call,
            Call::Changed
        );
        let mut scatter = Scatter::default();
        let logs: Vec<f64> = [1.10_f64, 1.14, 1.18].iter().map(|r| r.ln()).collect();
        for _ in 0..5 {
            scatter.add(&logs);
        }
        let c = judge(&now, &then, &scatter);
        assert_ne!(c.call, Call::Changed, "{c:?}");
        assert!((c.before - 1.14).abs() < 0.005, "the runs' mean: {c:?}");
        assert!(c.reason.contains("(the mean of 3 runs)"), "{}", c.reason);
        // A lead that grew by a third is beyond any scatter of these runs.
        let far = comparison("hyper", "ntex", 1.52, 0.005);
        assert_eq!(judge(&far, &then, &scatter).call, Call::Changed);
    }

    #[test]
    fn the_more_comparisons_a_gate_asks_the_wider_each_interval() {
        let before = comparison("hyper", "warp", 1.03, 0.01);
        let now = comparison("hyper", "warp", 1.075, 0.01);
        let rule = Rule::default();
        let judged = |size: usize| {
            let family = Family {
                member: brigade_stats::per_member(rule.confidence(), size),
                size,
            };
            change(
                &now,
                &[&before],
                &[oriented(&before, "hyper", "warp").unwrap()],
                &Scatter::default(),
                &family,
                String::new(),
                &rule,
            )
        };
        let (one, many) = (judged(1), judged(40));
        assert_eq!(one.call, Call::Changed, "{one:?}");
        let width = |c: &CellChange| c.ci_pct.map(|(lo, hi)| hi - lo).unwrap();
        assert!(width(&many) > width(&one) * 1.4, "{many:?} vs {one:?}");
        assert!(
            many.reason.contains("simultaneous over 40 comparisons"),
            "{}",
            many.reason
        );
    }
}
