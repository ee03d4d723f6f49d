//! The verdicts of a comparison from what it measured: every side-by-side level judged on
//! efficiency, every isolated cell on throughput, both by the three-way rule of [`crate::verdict`];
//! every scenario from its cells; the caveats a reader should know; and `--rejudge`, which derives
//! all of them again from a written report.

use brigade_stats::{Interval, Outcome as Four};

use crate::report::{self, CellVerdict, LevelVerdict, Report, RunRecord, ScenarioVerdict};
use crate::side::{Looks, SideCell, SideRuntime};
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

/// What an interval rests on: how many of what, and whether it holds with the cell's others.
#[derive(Debug, Clone, Copy)]
struct Basis {
    /// How many samples per runtime.
    samples: usize,
    /// What one is called (`rounds`, `windows`, `isolated runs`, `searches each`).
    unit: &'static str,
    /// Whether the interval is simultaneous over the cell's comparisons.
    simultaneous: bool,
}

impl Basis {
    /// The basis of an interval standing alone: its own sample count, in `unit`.
    fn alone(interval: &Option<Interval>, unit: &'static str) -> Basis {
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
fn judged(
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
    comparison.samples = basis.samples;
    let how = pct_with_ci(&iv, confidence_pct, basis.simultaneous);
    let samples = format!("{} {}", basis.samples, basis.unit);
    let claim = claim(measure, a, b, &how, &samples);
    comparison.outcome = match brigade_stats::four_way(&iv, margin) {
        Four::Win => ComparisonOutcome::Win,
        Four::Ahead => ComparisonOutcome::Ahead,
        Four::Equivalent => ComparisonOutcome::Equivalent,
        Four::Undecided => ComparisonOutcome::Undecided,
    };
    comparison.sentence = match comparison.outcome {
        ComparisonOutcome::Win => claim,
        ComparisonOutcome::Ahead => {
            format!("{claim}: the order is known, the difference may be inside the ±{margin_pct:.0}% margin")
        }
        ComparisonOutcome::Equivalent => {
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
fn not_judged(
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

/// The comparisons as the roll-up reads them (not judged: no outcome).
pub fn as_judged(comparisons: &[Comparison]) -> Vec<brigade_stats::Judged> {
    comparisons
        .iter()
        .map(|c| brigade_stats::Judged {
            a: c.a.clone(),
            b: c.b.clone(),
            outcome: match c.outcome {
                ComparisonOutcome::Win => Some(Four::Win),
                ComparisonOutcome::Ahead => Some(Four::Ahead),
                ComparisonOutcome::Equivalent => Some(Four::Equivalent),
                ComparisonOutcome::Undecided => Some(Four::Undecided),
                ComparisonOutcome::NotJudged => None,
            },
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
        .find(|c| c.outcome == ComparisonOutcome::NotJudged)
        .map(|c| Verdict {
            outcome: Outcome::NoData,
            reason: c.sentence.clone(),
        })
}

/// A cell's verdict from its comparisons (each `a` is the cell's best runtime), by the one rule
/// of [`brigade_stats::leader`]: open while a comparison is undecided; else the leading group
/// (equivalent), or the best alone — a winner when every other trails beyond the margin, a
/// leader when the order is known but some trail inside it.
fn cell_verdict(comparisons: &[Comparison], not_judged_reason: Option<&str>) -> Verdict {
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
    let outcome = if comparisons
        .iter()
        .all(|c| c.outcome == ComparisonOutcome::Win)
    {
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

/// The share of the error rate spent at a level's first look when a second is planned
/// (`--budget`); the second look gets the rest. Bonferroni across looks: whatever the stopping
/// rule, the chance that either look states something false is at most the two shares summed.
const FIRST_LOOK_SHARE: f64 = 0.8;

/// The confidence a level's verdict is drawn at, for its last look: the whole error rate when one
/// look was planned, its share of it when two were.
pub fn look_confidence(confidence: f64, looks: &Looks) -> f64 {
    let error = 1.0 - confidence;
    match (looks.planned, looks.rounds.len()) {
        (2, 0 | 1) => 1.0 - error * FIRST_LOOK_SHARE,
        (2, _) => 1.0 - error * (1.0 - FIRST_LOOK_SHARE),
        _ => confidence,
    }
}

/// A runtime's figures are usable when it ran without error and completed requests.
fn usable_runtime(r: &&SideRuntime) -> bool {
    r.error.is_none() && r.requests > 0
}

/// Each of `runtimes`' mean log cost per round, over the first `rounds` rounds: in each round the
/// windows every one of them has a cost in (the same windows for all, so the difference of two is
/// the mean log of their paired ratios); a round without such a window is left out for all. With
/// it, each runtime's place in each round kept, when every runtime recorded its places.
fn round_table(
    cell: &SideCell,
    runtimes: &[&SideRuntime],
    rounds: usize,
) -> (Vec<Vec<f64>>, Option<Vec<Vec<u32>>>) {
    let costs: Vec<Vec<f64>> = runtimes.iter().map(|r| r.window_costs()).collect();
    let all = cell.rounds();
    let placed = runtimes
        .iter()
        .all(|r| r.round_positions.len() == all.len());
    let usable = |c: f64| c.is_finite() && c > 0.0;
    let mut table = vec![Vec::new(); runtimes.len()];
    let mut places = vec![Vec::new(); runtimes.len()];
    for (round, range) in all.into_iter().enumerate().take(rounds) {
        let common: Vec<usize> = range
            .filter(|&w| costs.iter().all(|c| c.get(w).is_some_and(|&v| usable(v))))
            .collect();
        if common.is_empty() {
            continue;
        }
        for (i, cost) in costs.iter().enumerate() {
            let mean = common.iter().map(|&w| cost[w].ln()).sum::<f64>() / common.len() as f64;
            table[i].push(mean);
            if placed {
                places[i].push(runtimes[i].round_positions[round]);
            }
        }
    }
    (table, placed.then_some(places))
}

/// How many rounds a level's verdict is drawn from: those of its last look (all, before looks).
fn judged_rounds(cell: &SideCell) -> usize {
    let all = cell.rounds().len();
    cell.looks
        .rounds
        .last()
        .map_or(all, |&n| (n as usize).min(all))
}

/// Every comparison of one side-by-side level: the cheapest runtime against each other one.
///
/// With rounds (fresh servers each), from [`brigade_stats::all_pairs`]: intervals simultaneous
/// over every pair, so the cell's statement holds as a whole, and the best is the runtime those
/// intervals are centred on (the lowest mean log cost). A level measured in one round (reports
/// written before rounds, or `--rounds 1`) falls back to the windows' block bootstrap per pair,
/// each interval alone; the best is then the lowest geometric mean over the windows all share —
/// the statistic its comparisons test.
pub fn judge_level(cell: &SideCell, store: &str, rule: &Rule) -> (Vec<Comparison>, Verdict) {
    let key = Key::level(cell, store);
    let unjudged = cell.not_judged.clone().or_else(|| saturated(cell));
    let usable: Vec<&SideRuntime> = cell.runtimes.iter().filter(usable_runtime).collect();
    let rounds = judged_rounds(cell);
    let (table, places) = round_table(cell, &usable, rounds.max(1));
    let mean_log: Vec<f64> = table.iter().map(|row| brigade_stats::mean(row)).collect();
    let mut order: Vec<usize> = (0..usable.len()).collect();
    order.sort_by(|&x, &y| {
        let by_cost = || {
            usable[x]
                .cpu_us_per_request
                .total_cmp(&usable[y].cpu_us_per_request)
        };
        match (mean_log.get(x), mean_log.get(y)) {
            (Some(a), Some(b)) if a.is_finite() && b.is_finite() => a.total_cmp(b),
            _ => by_cost(),
        }
    });
    let Some(&best) = order.first() else {
        return (Vec::new(), cell_verdict(&[], cell.not_judged.as_deref()));
    };
    let name = |i: usize| usable[i].runtime.as_str();
    let comparisons: Vec<Comparison> = if let Some(reason) = &unjudged {
        order[1..]
            .iter()
            .map(|&o| not_judged(Measure::Efficiency, &key, name(best), name(o), reason, rule))
            .collect()
    } else {
        level_intervals(
            cell,
            rule,
            &usable,
            &order,
            (&table, places.as_deref()),
            rounds,
        )
        .into_iter()
        .map(|(o, interval, basis)| {
            let (a, b) = (name(best), name(o));
            judged(Measure::Efficiency, &key, a, b, interval, basis, rule)
        })
        .collect()
    };
    let verdict = cell_verdict(&comparisons, unjudged.as_deref());
    (comparisons, verdict)
}

/// The interval of the best (`order[0]`) against each other runtime of a level, with what it
/// rests on: from the rounds' table (simultaneous) when there are two rounds or more, else from
/// the windows (each alone).
fn level_intervals(
    cell: &SideCell,
    rule: &Rule,
    usable: &[&SideRuntime],
    order: &[usize],
    (table, places): (&[Vec<f64>], Option<&[Vec<u32>]>),
    rounds: usize,
) -> Vec<(usize, Option<Interval>, Basis)> {
    let best = order[0];
    if rounds >= 2 {
        let confidence = look_confidence(rule.confidence(), &cell.looks);
        let simultaneous = brigade_stats::all_pairs(table, places, confidence);
        let basis = Basis {
            samples: simultaneous.as_ref().map_or(0, |s| s.rounds),
            unit: "rounds",
            simultaneous: true,
        };
        return order[1..]
            .iter()
            .map(|&o| (o, simultaneous.as_ref().map(|s| s.ratio(best, o)), basis))
            .collect();
    }
    let best_costs = usable[best].window_costs();
    order[1..]
        .iter()
        .map(|&o| {
            let interval = brigade_stats::paired_cost_ratio(
                &best_costs,
                &usable[o].window_costs(),
                rule.confidence(),
                BOOTSTRAP_SEED,
            );
            (o, interval, Basis::alone(&interval, "windows"))
        })
        .collect()
}

/// At or above this busy share of the server CPUs a level is not judged: the servers then queue
/// behind each other on the saturated CPUs, and side by side measures that queueing, not the load
/// the level names.
pub const SATURATED_BUSY_PCT: f64 = 90.0;

/// Why a level kept the server CPUs too busy to be judged, if it did.
fn saturated(cell: &SideCell) -> Option<String> {
    (cell.windows > 0 && cell.server_cpus_busy_pct >= SATURATED_BUSY_PCT).then(|| {
        format!(
            "saturated: the server CPUs were {:.0}% busy (≥ {SATURATED_BUSY_PCT:.0}%), so the \
             servers queued behind each other; lower the rate",
            cell.server_cpus_busy_pct
        )
    })
}

/// Every runtime measured under two labels in one side-by-side level (`hyper` and `hyper#2` in an
/// A/A run; `axum` in containers and `axum#loopback` beside it), and every I/O-engine variant
/// beside its sibling (`ntex-uring` and `ntex`, from `variants`), judged against each other by the
/// same rule as the level (from rounds when it has them, else its windows): the cheaper first.
/// What the verdicts between the best and the rest leave out, and what an A/A check, a
/// container's cost or an I/O engine's is.
pub fn judge_pairs(
    cells: &[SideCell],
    store: &str,
    rule: &Rule,
    variants: &std::collections::BTreeMap<String, String>,
) -> Vec<Comparison> {
    let mut out = Vec::new();
    for cell in cells.iter().filter(|c| c.not_judged.is_none()) {
        let key = Key::level(cell, store);
        for labelled in cell.runtimes.iter().filter(usable_runtime) {
            let base = crate::settings::runtime_of(&labelled.runtime);
            let base = match variants.get(&labelled.runtime) {
                Some(sibling) => sibling.as_str(),
                None if base == labelled.runtime => continue,
                None => base,
            };
            let Some(plain) = cell
                .runtimes
                .iter()
                .filter(usable_runtime)
                .find(|r| r.runtime == base)
            else {
                continue;
            };
            let mut pair = SideCell {
                runtimes: vec![plain.clone(), labelled.clone()],
                ..cell.clone()
            };
            pair.not_judged = None;
            let (comparisons, _) = judge_level(&pair, store, rule);
            out.extend(comparisons.into_iter().map(|mut c| {
                c.level = key.level.map(str::to_owned);
                c
            }));
        }
    }
    out
}

/// A level's leader from its comparisons (None when nothing was judged).
pub fn level_leader(comparisons: &[Comparison]) -> Option<brigade_stats::Leader> {
    brigade_stats::leader(&as_judged(comparisons))
}

/// A cell's leader over its levels: the group every judged level names, decided when each
/// level's is and all agree; else the groups joined, open.
fn cell_leader(levels: &[LevelVerdict]) -> Option<brigade_stats::Leader> {
    let leaders: Vec<&brigade_stats::Leader> =
        levels.iter().filter_map(|l| l.leader.as_ref()).collect();
    let first = leaders.first()?;
    let agree = leaders.iter().all(|l| {
        let mut a = l.runtimes.clone();
        let mut b = first.runtimes.clone();
        a.sort();
        b.sort();
        a == b
    });
    let mut joined = brigade_stats::Leader {
        runtimes: Vec::new(),
        decided: agree && leaders.iter().all(|l| l.decided),
        open: Vec::new(),
    };
    for l in &leaders {
        for r in &l.runtimes {
            if !joined.runtimes.contains(r) {
                joined.runtimes.push(r.clone());
            }
        }
        for r in &l.open {
            if !joined.open.contains(r) && !joined.runtimes.contains(r) {
                joined.open.push(r.clone());
            }
        }
    }
    Some(joined)
}

/// Whether a side-by-side level's leader is decided (no comparison undecided or unjudged).
pub fn level_decided(cell: &SideCell, store: &str, rule: &Rule) -> bool {
    let (comparisons, _) = judge_level(cell, store, rule);
    level_leader(&comparisons).is_some_and(|l| l.decided)
}

/// What a level still open after its first look would need: None when it is decided or cannot be
/// judged; else the rounds in all that would likely decide every open comparison at the second
/// look's confidence, or why no number within `max_rounds` would.
pub fn rounds_to_decide(
    cell: &SideCell,
    store: &str,
    rule: &Rule,
    max_rounds: u32,
) -> Option<Result<u32, String>> {
    if cell.not_judged.is_some() || saturated(cell).is_some() || level_decided(cell, store, rule) {
        return None;
    }
    let rounds = cell.rounds().len() as u32;
    let mut second = cell.clone();
    second.looks.rounds = vec![rounds, rounds];
    let (comparisons, _) = judge_level(&second, store, rule);
    let mut needed = rounds + 1;
    for c in comparisons
        .iter()
        .filter(|c| c.outcome == ComparisonOutcome::Undecided)
    {
        let estimate = (c.ratio.unwrap_or(1.0) - 1.0) * 100.0;
        match c.samples_to_decide {
            Some(n) if n as u32 <= max_rounds => needed = needed.max(n as u32),
            _ => {
                return Some(Err(format!(
                    "{} vs {}: {estimate:+.1}% — more than {max_rounds} rounds would be needed: \
                     not decidable in this budget",
                    c.a, c.b
                )))
            }
        }
    }
    Some(Ok(needed))
}

/// The throughput comparisons of one isolated cell: the runtime with the most successful hits/s
/// against each other one, from their **runs** (each run a fresh server, the runtimes' runs of one
/// repeat made back to back in rotated order: a block, as a side-by-side round is). The seconds of
/// one run are not independent samples (they share its server and its minute of the machine), so
/// they are averaged into the run's rate first; the intervals come from [`brigade_stats::all_pairs`]
/// over the repeats every runtime completed, simultaneous over the cell. One run per runtime is
/// reported but not judged.
fn judge_throughput(
    runs: &[&RunRecord],
    runtimes: &[String],
    key: &Key<'_>,
    rule: &Rule,
) -> (Vec<Comparison>, Verdict) {
    let unjudged = throughput_unjudged(runs);
    let (rates, repeats, table) = throughput_table(runs, runtimes);
    let mean_rate =
        |i: usize| brigade_stats::mean(&rates[i].1.iter().map(|(_, v)| *v).collect::<Vec<_>>());
    let mut order: Vec<usize> = (0..rates.len()).collect();
    order.sort_by(|&x, &y| match (table[x].is_empty(), table[y].is_empty()) {
        (false, false) => brigade_stats::mean(&table[x]).total_cmp(&brigade_stats::mean(&table[y])),
        _ => mean_rate(y).total_cmp(&mean_rate(x)),
    });
    let Some(&best) = order.first() else {
        return (Vec::new(), cell_verdict(&[], None));
    };
    let name = |i: usize| rates[i].0.as_str();
    let reason = unjudged.or_else(|| {
        (repeats.len() < 2).then(|| {
            "one isolated run per runtime: throughput is judged from runs, not seconds (give \
             --repeat 2 or more)"
                .to_owned()
        })
    });
    if let Some(reason) = reason {
        let comparisons: Vec<Comparison> = order[1..]
            .iter()
            .map(|&o| not_judged(Measure::Throughput, key, name(best), name(o), &reason, rule))
            .collect();
        return (comparisons, cell_verdict(&[], Some(&reason)));
    }
    let simultaneous = brigade_stats::all_pairs(&table, None, rule.confidence());
    let comparisons: Vec<Comparison> = order[1..]
        .iter()
        .map(|&o| {
            let interval = simultaneous.as_ref().map(|s| s.ratio(best, o));
            let basis = Basis {
                samples: repeats.len(),
                unit: "isolated runs each",
                simultaneous: true,
            };
            judged(
                Measure::Throughput,
                key,
                name(best),
                name(o),
                interval,
                basis,
                rule,
            )
        })
        .collect();
    let verdict = cell_verdict(&comparisons, None);
    (comparisons, verdict)
}

/// Each runtime's successful hits/s by repeat (runtimes without any left out).
type RatesByRepeat = Vec<(String, Vec<(u32, f64)>)>;

/// Per runtime (those with a rate), its successful hits/s in each repeat; the repeats every one
/// of them completed (complete blocks only); and the table of negated log rates over those repeats
/// (higher is better, so the negated log plays the log cost).
fn throughput_table(
    runs: &[&RunRecord],
    runtimes: &[String],
) -> (RatesByRepeat, Vec<u32>, Vec<Vec<f64>>) {
    // Per runtime, its successful hits/s in each repeat.
    let rates: RatesByRepeat = runtimes
        .iter()
        .map(|runtime| {
            let mine: Vec<(u32, f64)> = runs
                .iter()
                .filter(|r| &r.runtime == runtime)
                .filter_map(|r| r.ok_per_s().filter(|v| *v > 0.0).map(|v| (r.repeat, v)))
                .collect();
            (runtime.clone(), mine)
        })
        .filter(|(_, rates)| !rates.is_empty())
        .collect();
    // The repeats every runtime has a rate in: complete blocks only.
    let mut repeats: Vec<u32> = rates
        .first()
        .map(|(_, r)| r.iter().map(|(k, _)| *k).collect())
        .unwrap_or_default();
    repeats.retain(|k| rates.iter().all(|(_, r)| r.iter().any(|(j, _)| j == k)));
    // Higher is better: the negated log rate plays the log cost.
    let table: Vec<Vec<f64>> = rates
        .iter()
        .map(|(_, r)| {
            repeats
                .iter()
                .filter_map(|k| r.iter().find(|(j, _)| j == k).map(|(_, v)| -v.ln()))
                .collect()
        })
        .collect();
    (rates, repeats, table)
}

/// Why a cell's isolated runs cannot rank runtimes (contended, or generator-bound), if so.
fn throughput_unjudged(runs: &[&RunRecord]) -> Option<String> {
    runs.iter()
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
        })
}

/// The capacity comparisons of one cell's SLO searches. Search n of every runtime ran in one
/// round, interleaved step by step, so the round is a block as the verdicts' rounds are: the log of
/// 1 ÷ capacity per runtime and round goes to [`brigade_stats::all_pairs`], whose intervals hold
/// for every pair at once, and the runtime with the highest (geometric mean) capacity is compared
/// with each other one. A search that found no capacity is a result, not dropped: its runtime
/// cannot be ranked and its comparison says which search and why.
fn judge_capacity_cell(
    searches: &[&brigade_slo::SloSearch],
    key: &Key<'_>,
    rule: &Rule,
) -> (Vec<Comparison>, Verdict) {
    let (ranked, unranked) = capacities_by_round(searches);
    if ranked.is_empty() {
        return no_capacity_found(searches);
    }
    let log_costs: Vec<Vec<f64>> = ranked
        .iter()
        .map(|(_, caps)| caps.iter().map(|c| -c.ln()).collect())
        .collect();
    let simultaneous = brigade_stats::all_pairs(&log_costs, None, rule.confidence());
    let best = simultaneous.as_ref().map_or_else(
        || highest_capacity(&ranked),
        brigade_stats::Simultaneous::cheapest,
    );
    let best_name = ranked[best].0;
    let mut comparisons: Vec<Comparison> = (0..ranked.len())
        .filter(|&i| i != best)
        .map(|i| match &simultaneous {
            Some(sim) => {
                let basis = Basis {
                    samples: ranked[i].1.len(),
                    unit: "searches each",
                    simultaneous: ranked.len() > 2,
                };
                let mut c = judged(
                    Measure::Capacity,
                    key,
                    best_name,
                    ranked[i].0,
                    Some(sim.ratio(best, i)),
                    basis,
                    rule,
                );
                c.rate_per_s = Some((-sim.log_cost[best]).exp());
                c
            }
            None => not_judged(
                Measure::Capacity,
                key,
                best_name,
                ranked[i].0,
                "one search per runtime gives no interval (--slo-searches 2 or more)",
                rule,
            ),
        })
        .collect();
    for (runtime, why) in unranked {
        comparisons.push(not_judged(
            Measure::Capacity,
            key,
            best_name,
            runtime,
            &why,
            rule,
        ));
    }
    let verdict = cell_verdict(&comparisons, None);
    (comparisons, verdict)
}

/// A runtime's capacities, one per round.
type ByRound<'a> = (&'a str, Vec<f64>);

/// Every runtime's capacities by round (search n of each is round n), and the runtimes that miss
/// one, with which search and why.
fn capacities_by_round<'a>(
    searches: &[&'a brigade_slo::SloSearch],
) -> (Vec<ByRound<'a>>, Vec<(&'a str, String)>) {
    let mut runtimes: Vec<&str> = Vec::new();
    for s in searches {
        if !runtimes.contains(&s.runtime.as_str()) {
            runtimes.push(&s.runtime);
        }
    }
    let rounds = searches
        .iter()
        .map(|s| s.search as usize + 1)
        .max()
        .unwrap_or(0);
    let by_round = |runtime: &str| -> Result<Vec<f64>, String> {
        (0..rounds)
            .map(|n| {
                let found = searches
                    .iter()
                    .find(|s| s.runtime == runtime && s.search as usize == n);
                found.and_then(|s| s.outcome.capacity_per_s).ok_or_else(|| {
                    format!(
                        "search {} found no capacity ({})",
                        n + 1,
                        found
                            .and_then(|s| s.outcome.reason.as_deref())
                            .unwrap_or("not run")
                    )
                })
            })
            .collect()
    };
    let mut ranked = Vec::new();
    let mut unranked = Vec::new();
    for runtime in runtimes {
        match by_round(runtime) {
            Ok(caps) => ranked.push((runtime, caps)),
            Err(why) => unranked.push((runtime, why)),
        }
    }
    (ranked, unranked)
}

/// The index of the runtime with the highest geometric mean capacity (when no interval could be
/// drawn).
fn highest_capacity(ranked: &[ByRound<'_>]) -> usize {
    let log_mean = |caps: &Vec<f64>| caps.iter().map(|c| c.ln()).sum::<f64>() / caps.len() as f64;
    (0..ranked.len())
        .max_by(|&a, &b| log_mean(&ranked[a].1).total_cmp(&log_mean(&ranked[b].1)))
        .unwrap_or(0)
}

/// A cell no search found a capacity in: generator-bound when a search says so, else no data,
/// with each search's reason.
fn no_capacity_found(searches: &[&brigade_slo::SloSearch]) -> (Vec<Comparison>, Verdict) {
    let missing: Vec<String> = searches
        .iter()
        .filter(|s| s.outcome.capacity_per_s.is_none())
        .map(|s| {
            format!(
                "{} search {}: {}",
                s.runtime,
                s.search + 1,
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
            let mine: Vec<&brigade_slo::SloSearch> = slo_searches
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
                    out.comparisons.extend(comparisons.iter().cloned());
                    efficiency.push((at(Some(cell.level.clone())), verdict.clone()));
                    levels.push(LevelVerdict {
                        level: cell.level.clone(),
                        rate_per_s: cell.rate_per_s,
                        busy_pct: (cell.windows > 0).then_some(cell.server_cpus_busy_pct),
                        leader: level_leader(&comparisons),
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
                    leader: cell_leader(&levels),
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
    report.pairs = judge_pairs(
        &report.side_by_side,
        &report.settings.store,
        rule,
        &report.settings.engine_variants,
    );
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
    let cells = &report.side_by_side;
    if cells.is_empty() {
        return;
    }
    notes.push(format!(
        "{} Latency measured side by side includes the other servers' work and is not judged.",
        crate::report::answer::tally(report)
    ));
    let one_round = cells
        .iter()
        .filter(|c| c.not_judged.is_none() && c.rounds().len() < 2)
        .count();
    if one_round > 0 {
        notes.push(format!(
            "{one_round} of {} levels were measured in one round of servers (a report written \
             before rounds, or --rounds 1): their intervals come from the windows of one server \
             per runtime and cannot cover how much two fresh servers of one runtime differ (about \
             0.7% here), so they claim more than they hold.",
            cells.len()
        ));
    }
    if report.settings.external {
        notes.push(
            "Servers compare did not start (--external) are the same instance in every round: \
             their comparisons cannot cover the instance effect."
                .to_owned(),
        );
    }
    let stopped: Vec<String> = cells
        .iter()
        .filter_map(|c| {
            c.looks
                .stopped
                .as_ref()
                .map(|why| format!("{} {} users at {}: {why}", c.scenario, c.users, c.level))
        })
        .collect();
    if !stopped.is_empty() {
        notes.push(format!("Left open by the budget: {}.", stopped.join("; ")));
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
        let none = Default::default();
        let pairs = judge_pairs(
            std::slice::from_ref(&cell),
            "embedded",
            &Rule::default(),
            &none,
        );
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
        assert!(judge_pairs(&[not], "embedded", &Rule::default(), &none).is_empty());
        let plain = side(&[("axum", 27.5), ("actix", 30.0)], 20, 0.3);
        assert!(judge_pairs(&[plain], "embedded", &Rule::default(), &none).is_empty());
    }

    #[test]
    fn an_engine_variant_is_judged_against_its_sibling_and_no_other() {
        let cell = side(
            &[("ntex", 30.0), ("ntex-uring", 27.0), ("hyper", 25.0)],
            20,
            0.3,
        );
        let variants = [("ntex-uring".to_owned(), "ntex".to_owned())].into();
        let pairs = judge_pairs(
            std::slice::from_ref(&cell),
            "embedded",
            &Rule::default(),
            &variants,
        );
        assert_eq!(pairs.len(), 1, "{pairs:?}");
        assert_eq!(
            (pairs[0].a.as_str(), pairs[0].b.as_str()),
            ("ntex-uring", "ntex")
        );
        // Without the variant named, the same names are two runtimes like any others.
        let none = Default::default();
        assert!(judge_pairs(&[cell], "embedded", &Rule::default(), &none).is_empty());
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

    /// A level of `rounds` rounds of `windows` windows: each runtime's cost `us`, times a factor
    /// per round for the server instance (`instance[r]` for the first runtime, reversed for the
    /// others) and the machine's wobble shared by all in a window.
    fn rounds_cell(
        costs: &[(&str, f64)],
        rounds: usize,
        windows: usize,
        instance: f64,
    ) -> SideCell {
        let mut cell = side(costs, rounds * windows, 0.3);
        for (i, r) in cell.runtimes.iter_mut().enumerate() {
            for (w, ns) in r.window_cpu_ns.iter_mut().enumerate() {
                let round = w / windows;
                let sign = if (round + i).is_multiple_of(2) {
                    1.0
                } else {
                    -1.0
                };
                *ns = (*ns as f64 * (1.0 + sign * instance)) as u64;
            }
        }
        cell.round_windows = vec![windows as u32; rounds];
        cell.looks = Looks {
            rounds: vec![rounds as u32],
            planned: 1,
            stopped: None,
        };
        cell
    }

    #[test]
    fn rounds_give_intervals_simultaneous_over_the_cell_and_a_decided_leader() {
        // near 1.8% behind lean (an order, its interval reaching past the 2% margin), heavy 12%
        // behind (a win).
        let cell = rounds_cell(
            &[("near", 25.45), ("lean", 25.0), ("heavy", 28.0)],
            5,
            6,
            0.003,
        );
        let rule = Rule::default();
        let (comparisons, verdict) = judge_level(&cell, "embedded", &rule);
        assert_eq!(comparisons.len(), 2);
        assert!(comparisons
            .iter()
            .all(|c| c.a == "lean" && c.simultaneous && c.samples == 5));
        let of = |b: &str| comparisons.iter().find(|c| c.b == b).unwrap();
        assert_eq!(
            of("heavy").outcome,
            ComparisonOutcome::Win,
            "{:?}",
            of("heavy")
        );
        assert_eq!(
            of("near").outcome,
            ComparisonOutcome::Ahead,
            "{:?}",
            of("near")
        );
        assert!(
            of("near").sentence.contains("simultaneous CI"),
            "{}",
            of("near").sentence
        );
        let leader = level_leader(&comparisons).unwrap();
        assert_eq!(
            (leader.runtimes.clone(), leader.decided),
            (vec!["lean".to_owned()], true)
        );
        assert!(matches!(verdict.outcome, Outcome::Leads { ref runtime, .. } if runtime == "lean"));
        assert!(level_decided(&cell, "embedded", &rule));
    }

    #[test]
    fn the_instance_effect_between_rounds_widens_the_interval_that_windows_alone_hide() {
        // ±1% per server instance, alternating: one round alone looks tight and wrong.
        let wide = rounds_cell(&[("hyper", 25.0), ("hyper#2", 25.0)], 4, 6, 0.01);
        let tight = rounds_cell(&[("hyper", 25.0), ("hyper#2", 25.0)], 4, 6, 0.0);
        let half = |cell: &SideCell| {
            let (c, _) = judge_level(cell, "embedded", &Rule::default());
            (c[0].ci_high.unwrap() - c[0].ci_low.unwrap()) / 2.0
        };
        assert!(
            half(&wide) > 3.0 * half(&tight),
            "{} vs {}",
            half(&wide),
            half(&tight)
        );
        let (c, _) = judge_level(&wide, "embedded", &Rule::default());
        assert!(
            c[0].ci_low.unwrap() <= 1.0 && c[0].ci_high.unwrap() >= 1.0,
            "{:?}",
            c[0]
        );
    }

    #[test]
    fn the_best_is_the_runtime_its_comparisons_test_not_the_cheapest_in_aggregate() {
        // a: 20 µs in one window with 100× the requests, 30 µs in the 19 others (21.6 µs in
        // aggregate); b: 25 µs throughout. Window by window b is cheaper by about 15%.
        let mut cell = side(&[("a", 21.6), ("b", 25.0)], 20, 0.0);
        let a = &mut cell.runtimes[0];
        a.window_requests[0] = 100_000;
        a.window_cpu_ns[0] = 2_000_000_000;
        for w in 1..20 {
            a.window_cpu_ns[w] = 30_000_000;
        }
        for r in &mut cell.runtimes {
            r.window_cpu_ns.iter_mut().enumerate().for_each(|(w, ns)| {
                *ns = (*ns as f64 * (1.0 + 0.002 * (w % 3) as f64)) as u64;
            });
        }
        cell.runtimes[1].window_cpu_ns = (0..20).map(|w| 25_000_000 + w as u64).collect();
        let (comparisons, verdict) = judge_level(&cell, "embedded", &Rule::default());
        let c = &comparisons[0];
        assert_eq!((c.a.as_str(), c.b.as_str()), ("b", "a"), "{c:?}");
        assert_eq!(c.outcome, ComparisonOutcome::Win, "{c:?}");
        assert!(matches!(verdict.outcome, Outcome::Winner { ref runtime, .. } if runtime == "b"));
    }

    #[test]
    fn a_level_with_the_server_cpus_saturated_is_not_judged() {
        let mut cell = side(&[("axum", 25.0), ("warp", 40.0)], 10, 0.1);
        cell.server_cpus_busy_pct = 93.0;
        let (comparisons, verdict) = judge_level(&cell, "embedded", &Rule::default());
        assert_eq!(comparisons[0].outcome, ComparisonOutcome::NotJudged);
        assert!(
            comparisons[0].sentence.contains("93% busy"),
            "{}",
            comparisons[0].sentence
        );
        assert_eq!(verdict.outcome, Outcome::NotJudged);
    }

    #[test]
    fn the_error_rate_is_split_between_two_planned_looks_and_whole_with_one() {
        let looks = |rounds: Vec<u32>, planned| Looks {
            rounds,
            planned,
            stopped: None,
        };
        assert_eq!(look_confidence(0.95, &looks(vec![4], 1)), 0.95);
        assert!((look_confidence(0.95, &looks(vec![4], 2)) - 0.96).abs() < 1e-12);
        assert!((look_confidence(0.95, &looks(vec![4, 8], 2)) - 0.99).abs() < 1e-12);
        assert_eq!(look_confidence(0.95, &Looks::default()), 0.95);
    }

    /// One runtime's independent searches, one per round: a capacity, or none with `reason`.
    fn searches(
        runtime: &str,
        capacities: &[Option<f64>],
        reason: &str,
    ) -> Vec<brigade_slo::SloSearch> {
        capacities
            .iter()
            .enumerate()
            .map(|(n, c)| brigade_slo::SloSearch {
                runtime: runtime.to_owned(),
                scenario: "s".to_owned(),
                users: 20,
                search: n as u32,
                outcome: brigade_slo::SearchOutcome {
                    slo: vec!["p99<10ms".to_owned()],
                    capacity_per_s: *c,
                    reason: c.is_none().then(|| reason.to_owned()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .collect()
    }

    fn capacity_key() -> Key<'static> {
        Key::cell("s", 20, 0, "memory")
    }

    fn judge_cell(runtimes: &[&Vec<brigade_slo::SloSearch>]) -> (Vec<Comparison>, Verdict) {
        let all: Vec<&brigade_slo::SloSearch> = runtimes.iter().flat_map(|r| r.iter()).collect();
        judge_capacity_cell(&all, &capacity_key(), &Rule::default())
    }

    #[test]
    fn capacities_are_judged_by_rounds_of_searches_best_first() {
        let fast = searches("fast", &[Some(10_000.0), Some(10_200.0), Some(9_800.0)], "");
        let slow = searches("slow", &[Some(8_000.0), Some(8_100.0), Some(7_900.0)], "");
        let (comparisons, verdict) = judge_cell(&[&slow, &fast]);
        assert_eq!(comparisons.len(), 1);
        let c = &comparisons[0];
        assert_eq!(
            (c.measure, c.a.as_str(), c.b.as_str()),
            (Measure::Capacity, "fast", "slow")
        );
        assert_eq!(c.outcome, ComparisonOutcome::Win, "{c:?}");
        assert!((c.ratio.unwrap() - 1.25).abs() < 0.01);
        assert_eq!(c.samples, 3);
        assert!((c.rate_per_s.unwrap() - 10_000.0).abs() < 10.0, "{c:?}");
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
        let twin = searches("twin", &[Some(10_000.0), Some(10_100.0), Some(9_900.0)], "");
        let same = searches("same", &[Some(10_050.0), Some(10_000.0), Some(9_950.0)], "");
        let (comparisons, _) = judge_cell(&[&twin, &same]);
        assert_eq!(
            comparisons[0].outcome,
            ComparisonOutcome::Equivalent,
            "{comparisons:?}"
        );
        // One search each gives no interval.
        let (comparisons, _) = judge_cell(&[
            &searches("a", &[Some(10_000.0)], ""),
            &searches("b", &[Some(8_000.0)], ""),
        ]);
        assert_eq!(comparisons[0].outcome, ComparisonOutcome::NotJudged);
        assert!(comparisons[0].sentence.contains("--slo-searches 2 or more"));
    }

    #[test]
    fn a_runtime_with_a_search_that_found_no_capacity_is_not_ranked_and_says_which() {
        let found = searches("found", &[Some(5_000.0), Some(5_000.0)], "");
        let bound = searches(
            "bound",
            &[None, None],
            "generator-bound at 9,000/s: its CPUs",
        );
        let (comparisons, verdict) = judge_cell(&[&found, &bound]);
        assert_eq!(comparisons.len(), 1);
        assert_eq!(comparisons[0].outcome, ComparisonOutcome::NotJudged);
        assert!(
            comparisons[0]
                .sentence
                .contains("search 1 found no capacity (generator-bound at 9,000/s"),
            "{comparisons:?}"
        );
        assert_eq!(verdict.outcome, Outcome::NoData);
        // One failed search of two is a result, not dropped: the runtime is not ranked.
        let refused = searches(
            "half",
            &[Some(5_200.0), None],
            "refused: this machine cannot",
        );
        let (comparisons, _) = judge_cell(&[&found, &refused]);
        assert_eq!(comparisons[0].outcome, ComparisonOutcome::NotJudged);
        assert!(
            comparisons[0]
                .sentence
                .contains("search 2 found no capacity (refused"),
            "{comparisons:?}"
        );
        // Nobody found one: generator-bound, with every reason.
        let (comparisons, verdict) = judge_cell(&[&bound]);
        assert!(comparisons.is_empty());
        assert_eq!(verdict.outcome, Outcome::GeneratorBound);
        assert!(
            verdict.reason.contains("bound search 1: generator-bound"),
            "{}",
            verdict.reason
        );
    }
}
