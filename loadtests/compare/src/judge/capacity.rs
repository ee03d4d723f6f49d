//! Capacity (`--slo`): every cell's searches judged on the highest rate that held every SLO. Search
//! n of every runtime ran in one round, interleaved step by step, so a round is a block and the
//! intervals are simultaneous over the cell.

use brigade_report::comparison::Comparison;
use brigade_report::verdict::{CellAt, Measure, Outcome, Rule, Verdict};
use brigade_slo::SloSearch;

use super::scenario::judge_scenario_at;
use super::words::{cell_verdict, judged, not_judged, Basis, Key};
use super::{Evidence, Judgement};

/// The capacity comparisons of one cell's SLO searches. Search n of every runtime ran in one
/// round, interleaved step by step, so the round is a block as the verdicts' rounds are: the log of
/// 1 ÷ capacity per runtime and round goes to [`brigade_stats::all_pairs`], whose intervals hold
/// for every pair at once, and the runtime with the highest (geometric mean) capacity is compared
/// with each other one. A search that found no capacity is a result, not dropped: its runtime
/// cannot be ranked and its comparison says which search and why.
fn judge_capacity_cell(
    searches: &[&SloSearch],
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
    searches: &[&'a SloSearch],
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
fn no_capacity_found(searches: &[&SloSearch]) -> (Vec<Comparison>, Verdict) {
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

/// Judges every `--slo` search of `evidence` on capacity: a verdict per cell (beside its
/// throughput and efficiency in `out.cells`) and per scenario, the comparisons appended.
pub(super) fn judge_all(evidence: &Evidence<'_>, rule: &Rule, out: &mut Judgement) {
    let settings = evidence.settings;
    if evidence.searches.is_empty() {
        return;
    }
    let several_preloads = settings.preloads.iter().any(|&n| n != 0);
    for scenario in &settings.scenarios {
        let mut judged = Vec::new();
        // The cells `judge` made, one per users × preload, in its order.
        for cell in out.cells.iter_mut().filter(|c| &c.scenario == scenario) {
            let mine: Vec<&SloSearch> = evidence
                .searches
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
            out.comparisons.extend(found);
            let at = CellAt {
                users: cell.users,
                preload: several_preloads.then_some(cell.preload),
                level: None,
            };
            judged.push((at, verdict.clone()));
            cell.capacity = Some(verdict);
        }
        if let Some(v) = out.scenarios.iter_mut().find(|v| &v.scenario == scenario) {
            v.capacity = (!judged.is_empty()).then(|| judge_scenario_at(&judged));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One runtime's independent searches, one per round: a capacity, or none with `reason`.
    fn searches(runtime: &str, capacities: &[Option<f64>], reason: &str) -> Vec<SloSearch> {
        capacities
            .iter()
            .enumerate()
            .map(|(n, c)| SloSearch {
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

    fn judge_cell(runtimes: &[&Vec<SloSearch>]) -> (Vec<Comparison>, Verdict) {
        let all: Vec<&SloSearch> = runtimes.iter().flat_map(|r| r.iter()).collect();
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
        assert_eq!(c.outcome, brigade_stats::Outcome::Win, "{c:?}");
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
            brigade_stats::Outcome::Equivalent,
            "{comparisons:?}"
        );
        // One search each gives no interval.
        let (comparisons, _) = judge_cell(&[
            &searches("a", &[Some(10_000.0)], ""),
            &searches("b", &[Some(8_000.0)], ""),
        ]);
        assert_eq!(comparisons[0].outcome, brigade_stats::Outcome::NotJudged);
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
        assert_eq!(comparisons[0].outcome, brigade_stats::Outcome::NotJudged);
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
        assert_eq!(comparisons[0].outcome, brigade_stats::Outcome::NotJudged);
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
