//! Throughput: every isolated cell judged on successful hits/s, from its runs — each run a fresh
//! server, a repeat's runs made back to back in rotated order (a block, as a side-by-side round
//! is) — with intervals simultaneous over the cell.

use brigade_report::comparison::Comparison;
use brigade_report::verdict::{Measure, Rule, Verdict};
use brigade_report::RunRecord;

use super::words::{cell_verdict, judged, not_judged, Basis, Key};

/// The throughput comparisons of one isolated cell: the runtime with the most successful hits/s
/// against each other one, from their **runs** (each run a fresh server, the runtimes' runs of one
/// repeat made back to back in rotated order: a block, as a side-by-side round is). The seconds of
/// one run are not independent samples (they share its server and its minute of the machine), so
/// they are averaged into the run's rate first; the intervals come from [`brigade_stats::all_pairs`]
/// over the repeats every runtime completed, simultaneous over the cell. One run per runtime is
/// reported but not judged.
pub(super) fn judge_cell(
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
