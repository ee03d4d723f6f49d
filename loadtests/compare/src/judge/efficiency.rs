//! Efficiency: every side-by-side level judged on server CPU per request. With rounds of fresh
//! servers, from [`brigade_stats::all_pairs`] over each round's mean log cost (intervals
//! simultaneous over the level); a level of one round from its windows' block bootstrap. Also the
//! pairs a level holds beside its best (A/A, one runtime under two labels, an I/O engine against its
//! sibling), a cell's leader over its levels, and a level whose added rounds (`--budget`) ran
//! only its contenders judged in two parts ([`judge_split`]).

use brigade_records::side::{Looks, SideCell, SideRuntime};
use brigade_report::comparison::Comparison;
use brigade_report::verdict::{Measure, Rule, Verdict};
use brigade_report::{LevelVerdict, Settings};
use brigade_stats::Interval;

use super::words::{as_judged, cell_verdict, judged, not_judged, Basis, Key};

/// The seed of every bootstrap: a verdict is a function of its figures alone, so `--rejudge`
/// gives the same intervals.
const BOOTSTRAP_SEED: u64 = 0x5EED_B007;

/// The share of the error rate spent at a level's first look when a second is planned
/// (`--budget`); the second look gets the rest. Bonferroni across looks: whatever the stopping
/// rule, the chance that either look states something false is at most the two shares summed.
const FIRST_LOOK_SHARE: f64 = 0.8;

/// The confidence a level's verdict is drawn at, for its last look: the whole error rate when one
/// look was planned, its share of it when two were.
pub(crate) fn look_confidence(confidence: f64, looks: &Looks) -> f64 {
    let error = 1.0 - confidence;
    match (looks.planned, looks.rounds.len()) {
        (2, 0 | 1) => 1.0 - error * FIRST_LOOK_SHARE,
        (2, _) => 1.0 - error * (1.0 - FIRST_LOOK_SHARE),
        _ => confidence,
    }
}

/// A runtime's figures are usable when it ran without error and completed requests.
pub(super) fn usable_runtime(r: &&SideRuntime) -> bool {
    r.error.is_none() && r.requests > 0
}

/// Each of `runtimes`' mean log cost per round, over the first `rounds` rounds: in each round the
/// windows every one of them has a cost in (the same windows for all, so the difference of two is
/// the mean log of their paired ratios); a round without such a window is left out for all. With
/// it, each runtime's place in each round kept, when every runtime recorded its places.
pub(super) fn round_table(
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
pub(super) fn judged_rounds(cell: &SideCell) -> usize {
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
///
/// A level whose rounds after the first look ran only its contenders (`looks.contenders`) is
/// judged in two parts: the contenders against each other on every round, at the second look's
/// confidence; every other runtime against their best from the first look's rounds, at the first
/// look's ([`judge_split`]; the contenders and their rounds: [`super::contenders`]).
pub(super) fn judge_level(cell: &SideCell, store: &str, rule: &Rule) -> (Vec<Comparison>, Verdict) {
    if split_by_contenders(cell) {
        return judge_split(cell, store, rule);
    }
    judge_whole(cell, store, rule)
}

/// [`judge_level`] of a level whose every round ran every runtime it judges.
pub(super) fn judge_whole(cell: &SideCell, store: &str, rule: &Rule) -> (Vec<Comparison>, Verdict) {
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

/// A level judged: its comparisons and its verdict with the level's figures and leader.
pub(super) fn judge_level_verdict(
    cell: &SideCell,
    settings: &Settings,
    rule: &Rule,
) -> (Vec<Comparison>, LevelVerdict) {
    let (comparisons, verdict) = judge_level(cell, &settings.store, rule);
    let level = LevelVerdict {
        level: cell.level.clone(),
        rate_per_s: cell.rate_per_s,
        busy_pct: (cell.windows > 0).then_some(cell.server_cpus_busy_pct),
        leader: level_leader(&comparisons),
        verdict,
    };
    (comparisons, level)
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
const SATURATED_BUSY_PCT: f64 = 90.0;

/// Why a level kept the server CPUs too busy to be judged, if it did.
pub(super) fn saturated(cell: &SideCell) -> Option<String> {
    (cell.windows > 0 && cell.server_cpus_busy_pct >= SATURATED_BUSY_PCT).then(|| {
        format!(
            "saturated: the server CPUs were {:.0}% busy (≥ {SATURATED_BUSY_PCT:.0}%), so the \
             servers queued behind each other; lower the rate",
            cell.server_cpus_busy_pct
        )
    })
}

/// Whether a level's rounds after its first look ran only some of its runtimes.
pub(super) fn split_by_contenders(cell: &SideCell) -> bool {
    cell.looks.rounds.len() >= 2
        && !cell.looks.contenders.is_empty()
        && cell.not_judged.is_none()
        && saturated(cell).is_none()
}

/// The level as its first look saw it: its first rounds, every runtime.
pub(super) fn first_look(cell: &SideCell) -> SideCell {
    let mut first = cell.clone();
    first.looks.rounds.truncate(1);
    first.looks.contenders.clear();
    first
}

/// The level restricted to the runtimes `names` (their places dropped: a round of copies fills
/// no place once each, so places cannot be removed from it).
pub(super) fn only(cell: &SideCell, names: &[String]) -> SideCell {
    let mut only = cell.clone();
    only.runtimes.retain(|r| names.contains(&r.runtime));
    for r in &mut only.runtimes {
        r.round_positions.clear();
    }
    only.looks.contenders.clear();
    only
}

/// A level whose later rounds ran its contenders only: the contenders judged against their best
/// on every round (a runtime's copies in a round pooled into its value there, so each round is a
/// complete block of the contenders), at the second look's confidence and simultaneous over the
/// contenders' pairs; every other runtime judged against that best from the first look's rounds,
/// at the first look's confidence and simultaneous over every pair there (a runtime the first look
/// decided may be undecided against a new best: it says so). The two looks split the error rate
/// as a level's looks always do ([`look_confidence`]), so the level's statement holds as a whole.
pub(super) fn judge_split(cell: &SideCell, store: &str, rule: &Rule) -> (Vec<Comparison>, Verdict) {
    let contenders = &cell.looks.contenders;
    let (mut comparisons, _) = judge_whole(&only(cell, contenders), store, rule);
    let first = first_look(cell);
    let Some(best) = comparisons.first().map(|c| c.a.clone()) else {
        return judge_whole(&first, store, rule);
    };
    let key = Key::level(cell, store);
    let usable: Vec<&SideRuntime> = first.runtimes.iter().filter(usable_runtime).collect();
    let rounds = judged_rounds(&first);
    let (table, places) = round_table(&first, &usable, rounds);
    let confidence = look_confidence(rule.confidence(), &first.looks);
    let simultaneous = brigade_stats::all_pairs(&table, places.as_deref(), confidence);
    let basis = Basis {
        samples: simultaneous.as_ref().map_or(0, |s| s.rounds),
        unit: "rounds",
        simultaneous: true,
    };
    let at = |name: &str| usable.iter().position(|r| r.runtime == name);
    for other in usable.iter().filter(|r| !contenders.contains(&r.runtime)) {
        let interval = match (&simultaneous, at(&best), at(&other.runtime)) {
            (Some(s), Some(a), Some(b)) => Some(s.ratio(a, b)),
            _ => None,
        };
        comparisons.push(judged(
            Measure::Efficiency,
            &key,
            &best,
            &other.runtime,
            interval,
            basis,
            rule,
        ));
    }
    comparisons.sort_by(|x, y| {
        let ratio = |c: &Comparison| c.ratio.unwrap_or(f64::INFINITY);
        ratio(x).total_cmp(&ratio(y))
    });
    let verdict = cell_verdict(&comparisons, None);
    (comparisons, verdict)
}

/// Every runtime measured under two labels in one side-by-side level (`hyper` and `hyper#2` in an
/// A/A run; `axum` in containers and `axum#loopback` beside it), and every I/O-engine variant
/// beside its sibling (`ntex-uring` and `ntex`, from `variants`), judged against each other by the
/// same rule as the level (from rounds when it has them, else its windows): the cheaper first.
/// What the verdicts between the best and the rest leave out, and what an A/A check, a
/// container's cost or an I/O engine's is.
pub(super) fn judge_pairs(
    cells: &[SideCell],
    store: &str,
    rule: &Rule,
    variants: &std::collections::BTreeMap<String, String>,
) -> Vec<Comparison> {
    let mut out = Vec::new();
    for cell in cells.iter().filter(|c| c.not_judged.is_none()) {
        let key = Key::level(cell, store);
        for labelled in cell.runtimes.iter().filter(usable_runtime) {
            let base = brigade_meter::servers::runtime_of(&labelled.runtime);
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
            // A pair the later rounds ran both of is judged on every round; one of them alone,
            // from the first look's.
            let names = [plain.runtime.clone(), labelled.runtime.clone()];
            if split_by_contenders(cell) {
                pair = if names.iter().all(|n| cell.looks.contenders.contains(n)) {
                    only(&pair, &names)
                } else {
                    first_look(&pair)
                };
            }
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
fn level_leader(comparisons: &[Comparison]) -> Option<brigade_stats::Leader> {
    brigade_stats::leader(&as_judged(comparisons))
}

/// A cell's leader over its levels: the group every judged level names, decided when each
/// level's is and all agree; else the groups joined, open.
pub(super) fn cell_leader(levels: &[LevelVerdict]) -> Option<brigade_stats::Leader> {
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
pub(super) fn level_decided(cell: &SideCell, store: &str, rule: &Rule) -> bool {
    let (comparisons, _) = judge_level(cell, store, rule);
    level_leader(&comparisons).is_some_and(|l| l.decided)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use brigade_report::verdict::Outcome;

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
        assert_eq!(c.outcome, brigade_stats::Outcome::Win);
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
        assert_eq!(c.outcome, brigade_stats::Outcome::Win);
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
            brigade_stats::Outcome::Equivalent,
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
        assert_eq!(comparisons[0].outcome, brigade_stats::Outcome::NotJudged);
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
        assert_eq!(c.outcome, brigade_stats::Outcome::Undecided, "{c:?}");
        assert!(c.sentence.starts_with("undecided: "), "{}", c.sentence);
        assert!(matches!(verdict.outcome, Outcome::Undecided { .. }));
    }

    /// A level of `rounds` rounds of `windows` windows: each runtime's cost `us`, times a factor
    /// per round for the server instance (`instance[r]` for the first runtime, reversed for the
    /// others) and the machine's wobble shared by all in a window.
    pub(crate) fn rounds_cell(
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
            ..Looks::default()
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
            brigade_stats::Outcome::Win,
            "{:?}",
            of("heavy")
        );
        assert_eq!(
            of("near").outcome,
            brigade_stats::Outcome::Ahead,
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
        assert_eq!(c.outcome, brigade_stats::Outcome::Win, "{c:?}");
        assert!(matches!(verdict.outcome, Outcome::Winner { ref runtime, .. } if runtime == "b"));
    }

    #[test]
    fn a_level_with_the_server_cpus_saturated_is_not_judged() {
        let mut cell = side(&[("axum", 25.0), ("warp", 40.0)], 10, 0.1);
        cell.server_cpus_busy_pct = 93.0;
        let (comparisons, verdict) = judge_level(&cell, "embedded", &Rule::default());
        assert_eq!(comparisons[0].outcome, brigade_stats::Outcome::NotJudged);
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
            ..Looks::default()
        };
        assert_eq!(look_confidence(0.95, &looks(vec![4], 1)), 0.95);
        assert!((look_confidence(0.95, &looks(vec![4], 2)) - 0.96).abs() < 1e-12);
        assert!((look_confidence(0.95, &looks(vec![4, 8], 2)) - 0.99).abs() < 1e-12);
        assert_eq!(look_confidence(0.95, &Looks::default()), 0.95);
    }
}
