//! The verdicts of a comparison from what it measured: every side-by-side level judged on
//! efficiency, every isolated cell on throughput, both by the three-way rule of [`crate::verdict`];
//! every scenario from its cells; the caveats a reader should know; and `--rejudge`, which derives
//! all of them again from a written report.

use brigade_stats::{Interval, Outcome as Three};

use crate::report::{self, CellVerdict, LevelVerdict, Report, RunRecord, ScenarioVerdict};
use crate::side::SideCell;
use crate::verdict::{self, CellAt, CpuShape, Measure, Outcome, Rule, Verdict};

/// The seed of every bootstrap: a verdict is a function of its figures alone, so `--rejudge`
/// gives the same intervals.
const BOOTSTRAP_SEED: u64 = 0x5EED_B007;

pub use crate::report::comparison::{Comparison, ComparisonOutcome};

/// The cell key of a comparison, as the judge fills it in.
struct Key<'a> {
    scenario: &'a str,
    users: u32,
    preload: u64,
    level: Option<&'a str>,
    rate_per_s: Option<f64>,
    store: &'a str,
}

impl<'a> Key<'a> {
    /// The key of a side-by-side level.
    fn level(cell: &'a SideCell, store: &'a str) -> Key<'a> {
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
    fn cell(scenario: &'a str, users: u32, preload: u64, store: &'a str) -> Key<'a> {
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

/// How a unit of samples is named in a verdict line.
fn sample_words(measure: Measure, n: usize) -> String {
    match measure {
        Measure::Efficiency => format!("{n} windows"),
        Measure::Throughput => format!("{n} s of isolated runs each"),
        Measure::Capacity => format!("{n} confirmations each"),
    }
}

/// `(1.096, 1.091, 1.101)` → `9.6% (95% CI 9.1–10.1%)`.
fn pct_with_ci(iv: &Interval, confidence_pct: f64) -> String {
    format!(
        "{:.1}% ({confidence_pct:.0}% CI {:.1}–{:.1}%",
        (iv.ratio - 1.0) * 100.0,
        (iv.ci_low - 1.0) * 100.0,
        (iv.ci_high - 1.0) * 100.0
    )
}

/// One comparison of `a` (better) with `b` from their interval, judged by the three-way rule.
fn judged(
    measure: Measure,
    key: &Key<'_>,
    a: &str,
    b: &str,
    interval: Option<Interval>,
    rule: &Rule,
) -> Comparison {
    judged_with(measure, key, a, b, interval, None, rule)
}

/// [`judged`], with the samples per runtime said (`None`: the interval's own count).
fn judged_with(
    measure: Measure,
    key: &Key<'_>,
    a: &str,
    b: &str,
    interval: Option<Interval>,
    samples: Option<usize>,
    rule: &Rule,
) -> Comparison {
    let margin_pct = rule.margin_pct(measure);
    let margin = margin_pct / 100.0;
    let confidence_pct = rule.confidence_pct;
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
        outcome: ComparisonOutcome::NotJudged,
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
    comparison.samples = samples.unwrap_or(iv.samples);
    let how = pct_with_ci(&iv, confidence_pct);
    let samples = sample_words(measure, comparison.samples);
    let claim = claim(measure, a, b, &how, &samples);
    comparison.outcome = match brigade_stats::three_way(&iv, margin) {
        Three::Win => ComparisonOutcome::Win,
        Three::Equivalent => ComparisonOutcome::Equivalent,
        Three::Undecided => ComparisonOutcome::Undecided,
    };
    comparison.sentence = match comparison.outcome {
        ComparisonOutcome::Win => claim,
        ComparisonOutcome::Equivalent => {
            format!("{a} and {b} are equivalent: {claim}, inside the ±{margin_pct:.0}% margin")
        }
        _ => {
            comparison.samples_to_decide = brigade_stats::samples_to_decide(&iv, margin);
            let more = what_would_decide(measure, comparison.samples_to_decide);
            format!("undecided: {claim}, the interval straddles the ±{margin_pct:.0}% margin{more}")
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
fn what_would_decide(measure: Measure, samples_to_decide: Option<usize>) -> String {
    match samples_to_decide {
        Some(n) => format!(
            "; about {n} {} in all would likely decide it",
            match measure {
                Measure::Efficiency => "windows",
                Measure::Throughput => "seconds",
                Measure::Capacity => "confirmations",
            }
        ),
        None => "; it sits on the margin, more samples are unlikely to decide it".to_owned(),
    }
}

/// A comparison that could not be judged, for `reason`.
fn not_judged(
    measure: Measure,
    key: &Key<'_>,
    a: &str,
    b: &str,
    reason: &str,
    rule: &Rule,
) -> Comparison {
    let mut c = judged(measure, key, a, b, None, rule);
    c.reason = Some(reason.to_owned());
    c.sentence = format!("{a} vs {b}: not judged, {reason}");
    c
}

/// A cell's verdict from its comparisons (each `a` is the cell's best runtime).
fn cell_verdict(comparisons: &[Comparison], not_judged_reason: Option<&str>) -> Verdict {
    if let Some(reason) = not_judged_reason {
        let outcome = if reason.starts_with("generator-bound") {
            Outcome::GeneratorBound
        } else if reason.starts_with("contended") {
            Outcome::Contended
        } else {
            Outcome::NotJudged
        };
        return Verdict {
            outcome,
            reason: format!("no verdict: {reason}"),
        };
    }
    let Some(first) = comparisons.first() else {
        return Verdict {
            outcome: Outcome::NoData,
            reason: "fewer than two runtimes produced figures; nothing to compare".to_owned(),
        };
    };
    if comparisons
        .iter()
        .any(|c| c.outcome == ComparisonOutcome::NotJudged)
    {
        let c = comparisons
            .iter()
            .find(|c| c.outcome == ComparisonOutcome::NotJudged)
            .unwrap_or(first);
        return Verdict {
            outcome: Outcome::NoData,
            reason: c.sentence.clone(),
        };
    }
    let best = first.a.clone();
    let lines = |filter: &dyn Fn(&Comparison) -> bool| -> Vec<String> {
        comparisons
            .iter()
            .filter(|c| filter(c))
            .map(|c| c.sentence.clone())
            .collect()
    };
    let undecided: Vec<&Comparison> = comparisons
        .iter()
        .filter(|c| c.outcome == ComparisonOutcome::Undecided)
        .collect();
    let mut top = vec![best.clone()];
    if !undecided.is_empty() {
        top.extend(undecided.iter().map(|c| c.b.clone()));
        return Verdict {
            outcome: Outcome::Undecided { leaders: top },
            reason: lines(&|_| true).join("; "),
        };
    }
    let equivalent: Vec<&Comparison> = comparisons
        .iter()
        .filter(|c| c.outcome == ComparisonOutcome::Equivalent)
        .collect();
    if equivalent.is_empty() {
        // Every other runtime loses: the runner-up is the closest.
        let runner_up = comparisons
            .iter()
            .min_by(|x, y| x.ratio.unwrap_or(1.0).total_cmp(&y.ratio.unwrap_or(1.0)))
            .unwrap_or(first);
        return Verdict {
            outcome: Outcome::Winner {
                runtime: best,
                runner_up: runner_up.b.clone(),
                margin_pct: (runner_up.ratio.unwrap_or(1.0) - 1.0) * 100.0,
            },
            reason: lines(&|_| true).join("; "),
        };
    }
    top.extend(equivalent.iter().map(|c| c.b.clone()));
    Verdict {
        outcome: Outcome::Equivalent { leaders: top },
        reason: lines(&|_| true).join("; "),
    }
}

/// Every comparison of one side-by-side level: the runtime with the lowest CPU per request
/// against each other one, paired window by window.
pub fn judge_level(cell: &SideCell, store: &str, rule: &Rule) -> (Vec<Comparison>, Verdict) {
    let key = Key::level(cell, store);
    let usable: Vec<&crate::side::SideRuntime> = cell
        .runtimes
        .iter()
        .filter(|r| r.error.is_none() && r.requests > 0)
        .collect();
    let mut ranked = usable.clone();
    ranked.sort_by(|x, y| x.cpu_us_per_request.total_cmp(&y.cpu_us_per_request));
    let Some(best) = ranked.first() else {
        return (Vec::new(), cell_verdict(&[], cell.not_judged.as_deref()));
    };
    let best_costs = best.window_costs();
    let comparisons: Vec<Comparison> = ranked[1..]
        .iter()
        .map(|other| match &cell.not_judged {
            Some(reason) => not_judged(
                Measure::Efficiency,
                &key,
                &best.runtime,
                &other.runtime,
                reason,
                rule,
            ),
            None => {
                let interval = brigade_stats::paired_cost_ratio(
                    &best_costs,
                    &other.window_costs(),
                    rule.confidence(),
                    BOOTSTRAP_SEED,
                );
                judged(
                    Measure::Efficiency,
                    &key,
                    &best.runtime,
                    &other.runtime,
                    interval,
                    rule,
                )
            }
        })
        .collect();
    let verdict = cell_verdict(&comparisons, cell.not_judged.as_deref());
    (comparisons, verdict)
}

/// Every runtime measured under two labels in one side-by-side level (`hyper` and `hyper#2` in an
/// A/A run; `axum` in containers and `axum#loopback` beside it), judged against each other by the
/// same paired per-window rule: the cheaper first. What the verdicts between the best and the
/// rest leave out, and what an A/A check or a container's cost is.
pub fn judge_pairs(cells: &[SideCell], store: &str, rule: &Rule) -> Vec<Comparison> {
    let mut out = Vec::new();
    for cell in cells.iter().filter(|c| c.not_judged.is_none()) {
        let key = Key::level(cell, store);
        let usable = |r: &&crate::side::SideRuntime| r.error.is_none() && r.requests > 0;
        for labelled in cell.runtimes.iter().filter(usable) {
            let base = crate::settings::runtime_of(&labelled.runtime);
            if base == labelled.runtime {
                continue;
            }
            let Some(plain) = cell
                .runtimes
                .iter()
                .filter(usable)
                .find(|r| r.runtime == base)
            else {
                continue;
            };
            let (a, b) = if labelled.cpu_us_per_request < plain.cpu_us_per_request {
                (labelled, plain)
            } else {
                (plain, labelled)
            };
            let interval = brigade_stats::paired_cost_ratio(
                &a.window_costs(),
                &b.window_costs(),
                rule.confidence(),
                BOOTSTRAP_SEED,
            );
            out.push(judged(
                Measure::Efficiency,
                &key,
                &a.runtime,
                &b.runtime,
                interval,
                rule,
            ));
        }
    }
    out
}

/// Whether a side-by-side level's verdict is decided (every comparison won or equivalent).
pub fn level_decided(cell: &SideCell, store: &str, rule: &Rule) -> bool {
    let (comparisons, _) = judge_level(cell, store, rule);
    !comparisons.is_empty()
        && comparisons.iter().all(|c| {
            matches!(
                c.outcome,
                ComparisonOutcome::Win | ComparisonOutcome::Equivalent
            )
        })
}

/// Successful hits in each second of a run's measured window.
fn ok_seconds(run: &RunRecord) -> Vec<f64> {
    run.result
        .as_ref()
        .map(|r| {
            r.seconds
                .iter()
                .filter(|s| f64::from(s.second) + 1.0 <= r.elapsed_s + 0.05)
                .map(|s| s.requests.saturating_sub(s.errors) as f64)
                .collect()
        })
        .unwrap_or_default()
}

/// The throughput comparisons of one isolated cell: the runtime with the most successful hits/s
/// against each other one, from the seconds of their runs (unpaired: runs of different times).
/// Reports written before per-second series fall back to one figure per repeat.
fn judge_throughput(
    runs: &[&RunRecord],
    runtimes: &[String],
    key: &Key<'_>,
    rule: &Rule,
) -> (Vec<Comparison>, Verdict) {
    // A cell whose runs cannot rank runtimes still lists its comparisons, not judged, with why.
    let unjudged = runs
        .iter()
        .find_map(|r| {
            r.contended.as_ref().map(|why| {
                format!(
                    "contended: in the {} run {why}; rerun on a quieter machine",
                    r.runtime
                )
            })
        })
        .or_else(|| {
            runs.iter().find_map(|r| {
                r.generator_bound.as_ref().map(|why| {
                    format!(
                        "generator-bound in the {} run ({why}); the side-by-side efficiency \
                         verdict still ranks the servers",
                        r.runtime
                    )
                })
            })
        });
    let samples: Vec<(String, Vec<f64>)> = runtimes
        .iter()
        .map(|runtime| {
            let mine: Vec<&&RunRecord> = runs.iter().filter(|r| &r.runtime == runtime).collect();
            let mut seconds: Vec<f64> = mine.iter().flat_map(|r| ok_seconds(r)).collect();
            if seconds.len() < 2 {
                seconds = mine.iter().filter_map(|r| r.ok_per_s()).collect();
            }
            (runtime.clone(), seconds)
        })
        .filter(|(_, s)| !s.is_empty())
        .collect();
    let mut ranked: Vec<&(String, Vec<f64>)> = samples.iter().collect();
    ranked.sort_by(|x, y| brigade_stats::mean(&y.1).total_cmp(&brigade_stats::mean(&x.1)));
    let Some(best) = ranked.first() else {
        return (Vec::new(), cell_verdict(&[], None));
    };
    if let Some(reason) = unjudged {
        let comparisons: Vec<Comparison> = ranked[1..]
            .iter()
            .map(|other| not_judged(Measure::Throughput, key, &best.0, &other.0, &reason, rule))
            .collect();
        return (comparisons, cell_verdict(&[], Some(&reason)));
    }
    let comparisons: Vec<Comparison> = ranked[1..]
        .iter()
        .map(|other| {
            let interval = brigade_stats::unpaired_rate_ratio(
                &best.1,
                &other.1,
                rule.confidence(),
                BOOTSTRAP_SEED,
            );
            // Seconds per runtime, the fewer of the two (the interval counts both sides).
            let samples = best.1.len().min(other.1.len());
            judged_with(
                Measure::Throughput,
                key,
                &best.0,
                &other.0,
                interval,
                Some(samples),
                rule,
            )
        })
        .collect();
    let verdict = cell_verdict(&comparisons, None);
    (comparisons, verdict)
}

/// The capacity comparisons of one cell's SLO searches: the runtime with the highest mean
/// confirmed rate against each other one, from the rates their confirmations confirmed
/// (unpaired: each search's steps ran at their own times, interleaved with the others'). A
/// search without a capacity, or whose capacity carries the stalls note, is not ranked.
fn judge_capacity_cell(
    searches: &[&brigade_load::slo::SloSearch],
    key: &Key<'_>,
    rule: &Rule,
) -> (Vec<Comparison>, Verdict) {
    let mut found: Vec<&&brigade_load::slo::SloSearch> =
        searches.iter().filter(|s| usable_capacity(s)).collect();
    // Best first by the mean confirmed rate, the figure the ratio is made of.
    found.sort_by(|x, y| capacity_rank(y).total_cmp(&capacity_rank(x)));
    let Some(best) = found.first() else {
        return no_capacity_found(searches);
    };
    let mut comparisons: Vec<Comparison> = found[1..]
        .iter()
        .map(|other| capacity_comparison(best, other, key, rule))
        .collect();
    // A runtime without a usable capacity cannot be ranked: its comparison says why.
    for other in searches.iter().filter(|s| !usable_capacity(s)) {
        let reason = other
            .outcome
            .reason
            .as_deref()
            .unwrap_or("no capacity found");
        comparisons.push(not_judged(
            Measure::Capacity,
            key,
            &best.runtime,
            &other.runtime,
            reason,
            rule,
        ));
    }
    let verdict = cell_verdict(&comparisons, None);
    (comparisons, verdict)
}

/// Whether a search's capacity can be ranked. A capacity confirmed far below its bracket carries
/// a note (stalls that do not depend on the rate): it measures the machine, so it is listed but
/// not ranked.
fn usable_capacity(s: &brigade_load::slo::SloSearch) -> bool {
    s.outcome.capacity_per_s.is_some() && s.outcome.reason.is_none()
}

/// The rate a search is ranked by: the mean of its confirmed rates (its capacity without any).
fn capacity_rank(s: &brigade_load::slo::SloSearch) -> f64 {
    if s.outcome.repeats.is_empty() {
        s.outcome.capacity_per_s.unwrap_or(0.0)
    } else {
        brigade_stats::mean(&s.outcome.repeats)
    }
}

/// A cell no search found a usable capacity in: generator-bound when a search says so, else no
/// data, with each search's reason.
fn no_capacity_found(searches: &[&brigade_load::slo::SloSearch]) -> (Vec<Comparison>, Verdict) {
    let missing: Vec<String> = searches
        .iter()
        .filter(|s| !usable_capacity(s))
        .map(|s| {
            format!(
                "{}: {}",
                s.runtime,
                s.outcome.reason.as_deref().unwrap_or("no capacity")
            )
        })
        .collect();
    let reason = missing.join("; ");
    let outcome = if searches.iter().any(|s| {
        s.outcome
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("generator-bound"))
    }) {
        Outcome::GeneratorBound
    } else {
        Outcome::NoData
    };
    (
        Vec::new(),
        Verdict {
            outcome,
            reason: format!("no capacity found ({reason})"),
        },
    )
}

/// The capacity comparison of the best search with `other`, from their confirmed rates.
fn capacity_comparison(
    best: &brigade_load::slo::SloSearch,
    other: &brigade_load::slo::SloSearch,
    key: &Key<'_>,
    rule: &Rule,
) -> Comparison {
    let interval = brigade_stats::unpaired_rate_ratio(
        &best.outcome.repeats,
        &other.outcome.repeats,
        rule.confidence(),
        BOOTSTRAP_SEED,
    );
    let samples = best.outcome.repeats.len().min(other.outcome.repeats.len());
    let mut c = judged_with(
        Measure::Capacity,
        key,
        &best.runtime,
        &other.runtime,
        interval,
        Some(samples),
        rule,
    );
    c.rate_per_s = best.outcome.capacity_per_s;
    c
}

/// Judges every `--slo` search of `report` on capacity: a verdict per cell (in `report.cells`)
/// and per scenario, the comparisons appended to `report.comparisons`.
pub fn judge_capacity(report: &mut Report, rule: &Rule) {
    let Report {
        settings,
        slo_searches,
        cells,
        scenarios,
        comparisons,
        ..
    } = report;
    if slo_searches.is_empty() {
        return;
    }
    let several_preloads = settings.preloads.iter().any(|&n| n != 0);
    for scenario in &settings.scenarios {
        let mut judged = Vec::new();
        // The cells `judge` made, one per users × preload, in its order.
        for cell in cells.iter_mut().filter(|c| &c.scenario == scenario) {
            let mine: Vec<&brigade_load::slo::SloSearch> = slo_searches
                .iter()
                .filter(|s| {
                    &s.scenario == scenario && s.users == cell.users && s.preload == cell.preload
                })
                .collect();
            if mine.is_empty() {
                continue;
            }
            let key = Key::cell(scenario, cell.users, cell.preload, &settings.store);
            let (found, verdict) = judge_capacity_cell(&mine, &key, rule);
            comparisons.extend(found);
            let at = CellAt {
                users: cell.users,
                preload: several_preloads.then_some(cell.preload),
                level: None,
            };
            judged.push((at, verdict.clone()));
            cell.capacity = Some(verdict);
        }
        if let Some(v) = scenarios.iter_mut().find(|v| &v.scenario == scenario) {
            v.capacity = (!judged.is_empty()).then(|| verdict::judge_scenario_at(&judged));
        }
    }
}

/// Everything judged: cells, scenarios and every comparison.
#[derive(Debug, Clone, Default)]
pub struct Judgement {
    /// One per scenario × users × preload.
    pub cells: Vec<CellVerdict>,
    /// One per scenario.
    pub scenarios: Vec<ScenarioVerdict>,
    /// Every judged comparison.
    pub comparisons: Vec<Comparison>,
}

/// Judges every cell: throughput from the isolated runs, efficiency from the side-by-side levels;
/// every scenario from its cells.
pub fn judge(
    runs: &[RunRecord],
    side: &[SideCell],
    settings: &report::Settings,
    rule: &Rule,
) -> Judgement {
    let several_preloads = settings.preloads.iter().any(|&n| n != 0);
    let mut out = Judgement::default();
    for scenario in &settings.scenarios {
        let mut throughput = Vec::new();
        let mut efficiency = Vec::new();
        for &preload in &settings.preloads {
            for &users in &settings.users {
                let key = Key::cell(scenario, users, preload, &settings.store);
                let mine: Vec<&RunRecord> = runs
                    .iter()
                    .filter(|r| &r.scenario == scenario && r.users == users && r.preload == preload)
                    .collect();
                let on_throughput = if mine.is_empty() {
                    Verdict {
                        outcome: Outcome::NoData,
                        reason: "no isolated runs".to_owned(),
                    }
                } else {
                    let (comparisons, verdict) =
                        judge_throughput(&mine, &settings.runtimes, &key, rule);
                    out.comparisons.extend(comparisons);
                    verdict
                };
                let at = |level: Option<String>| CellAt {
                    users,
                    preload: several_preloads.then_some(preload),
                    level,
                };
                throughput.push((at(None), on_throughput.clone()));
                let mut levels = Vec::new();
                for cell in side
                    .iter()
                    .filter(|c| &c.scenario == scenario && c.users == users && c.preload == preload)
                {
                    let (comparisons, verdict) = judge_level(cell, &settings.store, rule);
                    out.comparisons.extend(comparisons);
                    efficiency.push((at(Some(cell.level.clone())), verdict.clone()));
                    levels.push(LevelVerdict {
                        level: cell.level.clone(),
                        rate_per_s: cell.rate_per_s,
                        verdict,
                    });
                }
                let summary = (!levels.is_empty()).then(|| {
                    let at_levels: Vec<(CellAt, Verdict)> = levels
                        .iter()
                        .map(|l| (at(Some(l.level.clone())), l.verdict.clone()))
                        .collect();
                    verdict::judge_scenario_at(&at_levels)
                });
                out.cells.push(CellVerdict {
                    scenario: scenario.clone(),
                    users,
                    preload,
                    verdict: on_throughput,
                    efficiency: summary,
                    efficiency_levels: levels,
                    capacity: None,
                });
            }
        }
        out.scenarios.push(ScenarioVerdict {
            scenario: scenario.clone(),
            verdict: verdict::judge_scenario_at(&throughput),
            efficiency: (!efficiency.is_empty()).then(|| verdict::judge_scenario_at(&efficiency)),
            capacity: None,
        });
    }
    out
}

/// Re-judges the report in `dir` (its `report.json`) with the current rules and `rule`, and
/// rewrites its three files: every flag, row, verdict and note is derived again from the recorded
/// runs and windows; nothing is run. Reports written before a field existed read with its
/// default (no preload, no side-by-side levels: throughput verdicts only).
pub fn rejudge(dir: &std::path::Path, rule: &Rule) -> anyhow::Result<Report> {
    let mut report = report::json::read(&dir.join("report.json"))?;
    let cpus = &report.threads.cpus;
    let shape = CpuShape {
        generator_cpus: cpus.generator.len(),
        server_cpus: cpus.server.len(),
        pinned: cpus.pinned,
    };
    for run in &mut report.runs {
        if run.result.is_some() {
            run.generator_bound = verdict::generator_bound(&run.cpu, shape);
            run.contended = verdict::contended(&run.cpu, shape);
        }
    }
    report.settings.rule = *rule;
    let thresholds = brigade_load::threshold::parse_all(&report.settings.thresholds)?;
    report.threshold_checks = report::check_thresholds(&report.runs, &thresholds);
    if report.settings.preloads.is_empty() {
        report.settings.preloads = vec![0];
    }
    let s = &report.settings;
    report.rows = report::rows(
        &report.runs,
        &s.scenarios,
        &s.users,
        &s.preloads,
        &s.runtimes,
    );
    report::add_breakdown(&mut report.rows, &report.side_by_side);
    let judged = judge(&report.runs, &report.side_by_side, &report.settings, rule);
    report.cells = judged.cells;
    report.scenarios = judged.scenarios;
    report.comparisons = judged.comparisons;
    report.pairs = judge_pairs(&report.side_by_side, &report.settings.store, rule);
    judge_capacity(&mut report, rule);
    report.notes = notes(&report);
    report::write_all(&report, dir)?;
    Ok(report)
}

/// The caveats a reader of this report should know.
pub(crate) fn notes(report: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    cpu_notes(report, &mut notes);
    side_by_side_note(report, &mut notes);
    isolated_run_notes(report, &mut notes);
    side_not_judged_note(report, &mut notes);
    settings_notes(report, &mut notes);
    failure_notes(report, &mut notes);
    notes
}

/// Where the servers and generator ran: shared CPUs, a small machine.
fn cpu_notes(report: &Report, notes: &mut Vec<String>) {
    let t = &report.threads;
    if !t.cpus.pinned {
        notes.push(
            "Servers and generator shared the CPUs (nothing pinned): they competed for them, and \
             generator-bound runs are detected only roughly."
                .to_owned(),
        );
    }
    if report.machine.cores <= 4 && report.settings.external {
        notes.push(format!(
            "A {}-core machine: the servers ran where they were put outside compare (server CPUs \
             {} as given), so this compares runtimes on a small slice of a machine, not how they \
             scale across cores.",
            report.machine.cores,
            crate::pin::list(&t.cpus.server),
        ));
    } else if report.machine.cores <= 4 {
        notes.push(format!(
            "A {}-core machine: each server ran on {} CPU with {} worker(s), so this compares \
             runtimes on a small slice of a machine, not how they scale across cores.",
            report.machine.cores,
            t.cpus.server.len(),
            t.server_workers
        ));
    }
}

/// How efficiency was measured side by side, and how much of it was decided.
fn side_by_side_note(report: &Report, notes: &mut Vec<String>) {
    let side_cells = report.side_by_side.len();
    if side_cells > 0 {
        let efficiency: Vec<&Comparison> = report
            .comparisons
            .iter()
            .filter(|c| c.measure == Measure::Efficiency)
            .collect();
        let decided = report
            .cells
            .iter()
            .flat_map(|c| &c.efficiency_levels)
            .filter(|l| {
                matches!(
                    l.verdict.outcome,
                    Outcome::Winner { .. } | Outcome::Equivalent { .. }
                )
            })
            .count();
        let mut widths: Vec<f64> = efficiency
            .iter()
            .filter_map(|c| Some((c.ci_high? - c.ci_low?) / 2.0 * 100.0))
            .collect();
        widths.sort_by(f64::total_cmp);
        let median = verdict::median(&widths);
        notes.push(format!(
            "Efficiency is measured side by side: every runtime's server alive at once on the same \
             CPUs, each offered the same rate; {decided} of {side_cells} cell levels decided (win or \
             equivalent); median interval half-width {median:.2} points. Latency measured side by \
             side includes the other servers' work and is not judged."
        ));
    }
}

/// The isolated runs whose figures show the generator's limit or other processes' work.
fn isolated_run_notes(report: &Report, notes: &mut Vec<String>) {
    let bound = report
        .runs
        .iter()
        .filter(|r| r.generator_bound.is_some() && r.contended.is_none())
        .count();
    if bound > 0 {
        notes.push(format!(
            "{bound} of {} isolated runs were generator-bound (the generator's CPUs were at least \
             90% busy, so the figures may show the generator's limit); their cells name no \
             throughput winner, but their side-by-side efficiency verdicts stand.",
            report.runs.len()
        ));
    }
    let contended = report.runs.iter().filter(|r| r.contended.is_some()).count();
    if contended > 0 {
        notes.push(format!(
            "{contended} of {} isolated runs shared their CPUs with other processes (at least \
             {:.0}% of a side's CPUs went to someone else); their cells name no throughput winner. \
             Side by side, such noise lands on every runtime in the same windows and cancels.",
            report.runs.len(),
            verdict::CONTENTION * 100.0
        ));
    }
}

/// The side-by-side levels left unjudged, and the first one's reason.
fn side_not_judged_note(report: &Report, notes: &mut Vec<String>) {
    let side_cells = report.side_by_side.len();
    let side_not_judged: Vec<&SideCell> = report
        .side_by_side
        .iter()
        .filter(|c| c.not_judged.is_some())
        .collect();
    if let Some(first) = side_not_judged.first() {
        notes.push(format!(
            "{} of {side_cells} side-by-side levels were not judged; first: {} {} users at {}: {}",
            side_not_judged.len(),
            first.scenario,
            first.users,
            first.level,
            first.not_judged.as_deref().unwrap_or_default()
        ));
    }
}

/// The settings that change what the figures mean: open loop, no keep-alive, planted costs.
fn settings_notes(report: &Report, notes: &mut Vec<String>) {
    let s = &report.settings;
    if let Some(rate) = s.rate {
        notes.push(format!(
            "Open loop: every runtime was offered the same {} requests/s in its isolated runs \
             (latency counted from each request's intended send time). Throughput verdicts say \
             only who kept up.",
            report::rate_words(rate)
        ));
    }
    if !s.keepalive {
        notes.push(
            "A new connection per request (no keep-alive): every request pays a TCP handshake and \
             close on both sides, so connection handling weighs as much as the route."
                .to_owned(),
        );
    }
    if !s.handicaps.is_empty() {
        let planted: Vec<String> = s
            .handicaps
            .iter()
            .map(|(r, us)| format!("{r} +{us} µs"))
            .collect();
        notes.push(format!(
            "Calibration: a known CPU cost was planted per request ({}; `serve --handicap-us`): \
             this report tests the verdicts, not the runtimes.",
            planted.join(", ")
        ));
    }
}

/// The runs that failed and the rows with many failed requests.
fn failure_notes(report: &Report, notes: &mut Vec<String>) {
    let failed: Vec<&RunRecord> = report.runs.iter().filter(|r| r.error.is_some()).collect();
    if !failed.is_empty() {
        notes.push(format!(
            "{} run(s) failed, first: {} {} {} users: {}",
            failed.len(),
            failed[0].runtime,
            failed[0].scenario,
            failed[0].users,
            failed[0].error.as_deref().unwrap_or_default()
        ));
    }
    for row in report.rows.iter().filter(|r| r.error_pct >= 1.0) {
        notes.push(format!(
            "{} on {} at {} users, preload {}: {:.1}% of requests failed (see report.json for the \
             kinds).",
            row.runtime, row.scenario, row.users, row.preload, row.error_pct
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::side::SideRuntime;

    fn side(costs: &[(&str, f64)], windows: usize, wobble: f64) -> SideCell {
        SideCell {
            scenario: "waiter".into(),
            users: 10,
            level: "40%".into(),
            rate_per_s: 1000.0,
            window_s: 1.0,
            windows,
            runtimes: costs
                .iter()
                .map(|(name, us)| SideRuntime {
                    runtime: (*name).to_owned(),
                    // The machine's noise: the same factor for every runtime in a window.
                    window_cpu_ns: (0..windows)
                        .map(|w| {
                            let machine = 1.0 + wobble * ((w * 7919 % 13) as f64 / 13.0 - 0.5);
                            let own = 1.0 + 0.004 * ((w * 31 + name.len()) % 5) as f64;
                            (us * 1e3 * 1000.0 * machine * own) as u64
                        })
                        .collect(),
                    window_requests: vec![1000; windows],
                    requests: 1000 * windows as u64,
                    cpu_us_per_request: *us,
                    ..SideRuntime::default()
                })
                .collect(),
            ..SideCell::default()
        }
    }

    #[test]
    fn a_runtime_under_two_labels_is_judged_against_itself_and_no_other() {
        let cell = side(
            &[("axum", 27.5), ("axum#loopback", 25.0), ("actix", 30.0)],
            20,
            0.3,
        );
        let pairs = judge_pairs(std::slice::from_ref(&cell), "embedded", &Rule::default());
        assert_eq!(pairs.len(), 1, "{pairs:?}");
        let c = &pairs[0];
        assert_eq!((c.a.as_str(), c.b.as_str()), ("axum#loopback", "axum"));
        assert_eq!(c.outcome, ComparisonOutcome::Win);
        assert!(c.sentence.starts_with("axum spends 1"), "{}", c.sentence);
        // A level that cannot be judged gives no pair; a cell without a second label none either.
        let not = SideCell {
            not_judged: Some("generator-bound".into()),
            ..cell
        };
        assert!(judge_pairs(&[not], "embedded", &Rule::default()).is_empty());
        let plain = side(&[("axum", 27.5), ("actix", 30.0)], 20, 0.3);
        assert!(judge_pairs(&[plain], "embedded", &Rule::default()).is_empty());
    }

    #[test]
    fn a_runtime_cheaper_by_far_more_than_the_margin_wins_with_its_interval_in_the_line() {
        let cell = side(&[("actix", 27.4), ("hyper", 25.0)], 20, 0.3);
        let (comparisons, verdict) = judge_level(&cell, "embedded", &Rule::default());
        assert_eq!(comparisons.len(), 1);
        let c = &comparisons[0];
        assert_eq!((c.a.as_str(), c.b.as_str()), ("hyper", "actix"));
        assert_eq!(c.outcome, ComparisonOutcome::Win);
        assert!(c.ratio.unwrap() > 1.05 && c.ci_low.unwrap() > 1.02, "{c:?}");
        assert!(
            c.sentence.starts_with("actix spends 9.")
                && c.sentence
                    .contains("20 windows) more CPU per request than hyper"),
            "{}",
            c.sentence
        );
        assert!(
            matches!(verdict.outcome, Outcome::Winner { ref runtime, .. } if runtime == "hyper")
        );
    }

    #[test]
    fn a_runtime_against_itself_is_equivalent_and_names_no_winner() {
        let cell = side(&[("hyper", 25.0), ("hyper#2", 25.0)], 20, 0.3);
        let (comparisons, verdict) = judge_level(&cell, "embedded", &Rule::default());
        assert_eq!(
            comparisons[0].outcome,
            ComparisonOutcome::Equivalent,
            "{:?}",
            comparisons[0]
        );
        assert!(
            matches!(verdict.outcome, Outcome::Equivalent { ref leaders } if leaders.len() == 2)
        );
        assert_eq!(
            verdict.label(),
            format!(
                "{} equivalent",
                match &verdict.outcome {
                    Outcome::Equivalent { leaders } => leaders.join("≈"),
                    _ => unreachable!(),
                }
            )
        );
    }

    #[test]
    fn a_level_the_generator_could_not_deliver_is_not_judged_and_says_why() {
        let mut cell = side(&[("axum", 25.0), ("warp", 40.0)], 10, 0.1);
        cell.not_judged =
            Some("generator-bound or saturated: warp completed 900/s of the 1000/s offered".into());
        let (comparisons, verdict) = judge_level(&cell, "embedded", &Rule::default());
        assert_eq!(comparisons[0].outcome, ComparisonOutcome::NotJudged);
        assert!(comparisons[0].reason.as_deref().unwrap().contains("900/s"));
        assert_eq!(verdict.outcome, Outcome::GeneratorBound);
    }

    #[test]
    fn a_difference_near_the_margin_is_undecided_with_an_estimate_of_windows_needed() {
        // 2.5% apart with noise that does not cancel (each runtime its own): wide interval.
        let mut cell = side(&[("axum", 25.0), ("warp", 25.6)], 10, 0.0);
        for (i, r) in cell.runtimes.iter_mut().enumerate() {
            for (w, ns) in r.window_cpu_ns.iter_mut().enumerate() {
                let own = 1.0 + 0.03 * (((w * 7 + i * 3) % 5) as f64 - 2.0) / 2.0;
                *ns = (*ns as f64 * own) as u64;
            }
        }
        let (comparisons, verdict) = judge_level(&cell, "embedded", &Rule::default());
        let c = &comparisons[0];
        assert_eq!(c.outcome, ComparisonOutcome::Undecided, "{c:?}");
        assert!(c.sentence.starts_with("undecided: "), "{}", c.sentence);
        assert!(matches!(verdict.outcome, Outcome::Undecided { .. }));
    }

    fn search(
        runtime: &str,
        repeats: &[f64],
        reason: Option<&str>,
    ) -> brigade_load::slo::SloSearch {
        brigade_load::slo::SloSearch {
            runtime: runtime.to_owned(),
            scenario: "s".to_owned(),
            users: 20,
            outcome: brigade_load::slo::SearchOutcome {
                slo: vec!["p99<10ms".to_owned()],
                capacity_per_s: reason.is_none().then(|| repeats[0]),
                reason: reason.map(str::to_owned),
                confirmed: reason.is_none(),
                repeats: repeats.to_vec(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn capacity_key() -> Key<'static> {
        Key::cell("s", 20, 0, "memory")
    }

    #[test]
    fn capacities_are_judged_from_the_confirmed_rates_best_first() {
        let rule = Rule::default();
        let fast = search("fast", &[10_000.0, 10_200.0, 9_800.0], None);
        let slow = search("slow", &[8_000.0, 8_100.0, 7_900.0], None);
        let (comparisons, verdict) = judge_capacity_cell(&[&slow, &fast], &capacity_key(), &rule);
        assert_eq!(comparisons.len(), 1);
        let c = &comparisons[0];
        assert_eq!(
            (c.measure, c.a.as_str(), c.b.as_str()),
            (Measure::Capacity, "fast", "slow")
        );
        assert_eq!(c.outcome, ComparisonOutcome::Win, "{c:?}");
        assert!((c.ratio.unwrap() - 1.25).abs() < 0.01);
        assert_eq!(c.samples, 3);
        assert!(
            c.sentence
                .contains("more requests/s than slow within the SLO"),
            "{}",
            c.sentence
        );
        assert!(
            matches!(verdict.outcome, Outcome::Winner { ref runtime, .. } if runtime == "fast")
        );
        // The same capacities within the 5% margin are equivalent.
        let twin = search("twin", &[10_000.0, 10_100.0, 9_900.0], None);
        let same = search("same", &[10_050.0, 10_000.0, 9_950.0], None);
        let (comparisons, _) = judge_capacity_cell(&[&twin, &same], &capacity_key(), &rule);
        assert_eq!(
            comparisons[0].outcome,
            ComparisonOutcome::Equivalent,
            "{comparisons:?}"
        );
    }

    #[test]
    fn a_runtime_without_a_capacity_is_not_judged_and_says_why() {
        let rule = Rule::default();
        let found = search("found", &[5_000.0, 5_000.0], None);
        let bound = search("bound", &[], Some("generator-bound at 9,000/s: its CPUs"));
        let (comparisons, verdict) = judge_capacity_cell(&[&found, &bound], &capacity_key(), &rule);
        assert_eq!(comparisons.len(), 1);
        assert_eq!(comparisons[0].outcome, ComparisonOutcome::NotJudged);
        assert!(comparisons[0]
            .sentence
            .contains("generator-bound at 9,000/s"));
        assert_eq!(verdict.outcome, Outcome::NoData);
        // A capacity confirmed far below its bracket is listed, not ranked.
        let mut stalled = search("stalled", &[1_000.0, 1_000.0], None);
        stalled.outcome.reason = Some("confirmed 80% below the bracket (5,000/s): stalls".into());
        let (comparisons, _) = judge_capacity_cell(&[&found, &stalled], &capacity_key(), &rule);
        assert_eq!(comparisons[0].outcome, ComparisonOutcome::NotJudged);
        assert!(
            comparisons[0].sentence.contains("stalls"),
            "{comparisons:?}"
        );
        // Nobody found one: generator-bound, with every reason.
        let (comparisons, verdict) = judge_capacity_cell(&[&bound], &capacity_key(), &rule);
        assert!(comparisons.is_empty());
        assert_eq!(verdict.outcome, Outcome::GeneratorBound);
        assert!(
            verdict.reason.contains("bound: generator-bound"),
            "{}",
            verdict.reason
        );
    }
}
