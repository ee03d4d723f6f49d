//! A scenario's efficiency answer pooled over its side-by-side levels: each runtime's cost relative
//! to the others from every judged level and round together ([`brigade_stats::over_levels`]: the
//! levels as blocks, the runtime × level interaction in the error, so a gap that moves with the
//! users or the load widens the interval), judged by the same four-way rule and margin, with the
//! leading group, where the order changes between levels, and each runtime's requests per server
//! CPU-second.

use brigade_records::side::{SideCell, SideRuntime};
use brigade_report::comparison::Comparison;
use brigade_report::verdict::{Measure, Rule};
use brigade_report::{PerCore, PooledVerdict};

use super::efficiency::{judged_rounds, round_table, saturated, usable_runtime};
use super::words::{as_judged, judged, Basis, Key};

/// Where a level lies, in the words the answer uses: `10 users at 40%`.
fn level_name(cell: &SideCell) -> String {
    if cell.preload > 0 {
        format!(
            "{} users, preload {} at {}",
            cell.users, cell.preload, cell.level
        )
    } else {
        format!("{} users at {}", cell.users, cell.level)
    }
}

/// Why a level cannot join the pool, if it cannot.
fn left_out(cell: &SideCell) -> Option<String> {
    if let Some(reason) = cell.not_judged.clone().or_else(|| saturated(cell)) {
        return Some(reason);
    }
    (judged_rounds(cell) < 2).then(|| "fewer than two rounds".to_owned())
}

/// The runtimes every pooled level measured usably, in the first level's order.
fn common_runtimes(cells: &[&SideCell]) -> Vec<String> {
    let usable = |cell: &SideCell| -> Vec<String> {
        cell.runtimes
            .iter()
            .filter(usable_runtime)
            .map(|r| r.runtime.clone())
            .collect()
    };
    let Some(first) = cells.first() else {
        return Vec::new();
    };
    usable(first)
        .into_iter()
        .filter(|name| cells.iter().all(|c| usable(c).contains(name)))
        .collect()
}

/// The scenario's levels as the pool reads them: each runtime's mean log cost per level (runtimes
/// in `names`' order), each level's own noise of a mean, and its requests per CPU-second per
/// runtime.
struct Table {
    means: Vec<Vec<f64>>,
    noise: Vec<f64>,
    per_core: Vec<Vec<f64>>,
}

fn table(cells: &[&SideCell], names: &[String], confidence: f64) -> Table {
    let mut t = Table {
        means: vec![Vec::new(); names.len()],
        noise: Vec::new(),
        per_core: vec![Vec::new(); names.len()],
    };
    for cell in cells {
        let runtimes: Vec<&SideRuntime> = names
            .iter()
            .filter_map(|n| cell.runtimes.iter().find(|r| &r.runtime == n))
            .collect();
        let (rounds, places) = round_table(cell, &runtimes, judged_rounds(cell));
        let own = brigade_stats::all_pairs(&rounds, places.as_deref(), confidence);
        t.noise
            .push(own.as_ref().map_or(f64::NAN, brigade_stats::mean_noise));
        for (i, row) in rounds.iter().enumerate() {
            t.means[i].push(brigade_stats::mean(row));
            t.per_core[i].push(1e6 / runtimes[i].cpu_us_per_request);
        }
    }
    t
}

/// Each runtime's requests per server CPU-second: the geometric mean over the levels and its range.
fn per_core(names: &[String], per_level: &[Vec<f64>]) -> Vec<PerCore> {
    names
        .iter()
        .zip(per_level)
        .map(|(name, values)| {
            let usable: Vec<f64> = values
                .iter()
                .copied()
                .filter(|v| v.is_finite() && *v > 0.0)
                .collect();
            let log_mean = brigade_stats::mean(&usable.iter().map(|v| v.ln()).collect::<Vec<_>>());
            PerCore {
                runtime: name.clone(),
                hits_per_cpu_s: log_mean.exp(),
                lowest: usable.iter().copied().fold(f64::INFINITY, f64::min),
                highest: usable.iter().copied().fold(0.0, f64::max),
            }
        })
        .collect()
}

/// Every runtime under two labels among `names` (`hyper` and `hyper#2`), as index pairs, the plain
/// label first.
fn labelled_pairs(names: &[String]) -> Vec<(usize, usize)> {
    names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let base = brigade_meter::servers::runtime_of(name);
            let plain = names.iter().position(|n| n == base)?;
            (plain != i).then_some((plain, i))
        })
        .collect()
}

/// Where the pooled best is decidedly behind another runtime at a level: the order changes there.
fn order_changes(best: &str, levels: &[&(&SideCell, Vec<Comparison>)]) -> Vec<String> {
    let mut out = Vec::new();
    for (cell, comparisons) in levels {
        let beaten = comparisons.iter().find(|c| {
            c.b == best
                && matches!(
                    c.outcome,
                    brigade_stats::Outcome::Win | brigade_stats::Outcome::Ahead
                )
        });
        if let Some(c) = beaten {
            let by = if c.outcome == brigade_stats::Outcome::Win {
                "beyond the margin"
            } else {
                "inside the margin"
            };
            out.push(format!(
                "at {} {} leads {best} ({by})",
                level_name(cell),
                c.a
            ));
        }
    }
    out
}

/// The pooled intervals judged: the best against each other runtime, cheapest first, and every
/// runtime under two labels against its plain one (the cheaper of the two as `a`). `at` is the
/// scenario, the store and how many levels were pooled.
fn judge_pool(
    s: &brigade_stats::Simultaneous,
    names: &[String],
    (scenario, store, levels): (&str, &str, usize),
    rule: &Rule,
) -> (Vec<Comparison>, Vec<Comparison>) {
    let key = Key {
        scenario,
        users: 0,
        preload: 0,
        level: Some("all levels"),
        rate_per_s: None,
        store,
    };
    let basis = Basis {
        samples: levels,
        unit: "levels",
        simultaneous: true,
    };
    let judge = |a: usize, b: usize| {
        let interval = Some(s.ratio(a, b));
        judged(
            Measure::Efficiency,
            &key,
            &names[a],
            &names[b],
            interval,
            basis,
            rule,
        )
    };
    let best = s.cheapest();
    let mut others: Vec<usize> = (0..names.len()).filter(|&i| i != best).collect();
    others.sort_by(|&x, &y| s.log_cost[x].total_cmp(&s.log_cost[y]));
    let comparisons = others.into_iter().map(|o| judge(best, o)).collect();
    let pairs = labelled_pairs(names)
        .into_iter()
        .map(|(x, y)| {
            if s.log_cost[x] <= s.log_cost[y] {
                judge(x, y)
            } else {
                judge(y, x)
            }
        })
        .collect();
    (comparisons, pairs)
}

/// The pooled verdict of `scenario` from its side-by-side levels, each with its own comparisons
/// (for where the order changes); None when the scenario has no side-by-side level.
pub(super) fn pool_scenario(
    scenario: &str,
    levels: &[(&SideCell, Vec<Comparison>)],
    store: &str,
    rule: &Rule,
) -> Option<PooledVerdict> {
    let mine: Vec<&(&SideCell, Vec<Comparison>)> = levels
        .iter()
        .filter(|(c, _)| c.scenario == scenario)
        .collect();
    if mine.is_empty() {
        return None;
    }
    let mut skipped = Vec::new();
    let mut kept = Vec::new();
    for level in &mine {
        match left_out(level.0) {
            Some(why) => skipped.push(format!("{}: {why}", level_name(level.0))),
            None => kept.push(level.0),
        }
    }
    let names = common_runtimes(&kept);
    let t = table(&kept, &names, rule.confidence());
    let pooled = brigade_stats::over_levels(&t.means, &t.noise, rule.confidence());
    let (comparisons, pairs) = match &pooled {
        Some(p) => judge_pool(&p.simultaneous, &names, (scenario, store, kept.len()), rule),
        None => (Vec::new(), Vec::new()),
    };
    // One level to pool (`--quick`): the scenario's answer is that level's own verdict.
    let comparisons = match (kept.as_slice(), comparisons.is_empty()) {
        ([only], true) => mine
            .iter()
            .find(|(c, _)| std::ptr::eq(*c, *only))
            .map(|(_, own)| own.clone())
            .unwrap_or_default(),
        _ => comparisons,
    };
    let leader = brigade_stats::leader(&as_judged(&comparisons));
    let best = comparisons.first().map(|c| c.a.clone());
    Some(PooledVerdict {
        levels: kept.iter().map(|c| level_name(c)).collect(),
        left_out: skipped,
        leader,
        comparisons,
        pairs,
        interaction: pooled.as_ref().and_then(|p| p.interaction),
        order_changes: best.map_or_else(Vec::new, |b| order_changes(&b, &mine)),
        per_core: per_core(&names, &t.per_core),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use brigade_records::side::Looks;

    /// A level of `rounds` rounds of four windows: runtime `name` costs `us` µs per request, times
    /// a fixed pseudo-random scatter per round and window (±0.5%), the same for every seed.
    fn level(users: u32, share: &str, costs: &[(&str, f64)], rounds: usize) -> SideCell {
        let windows = 4;
        let wobble = |i: usize, w: usize| {
            let x = ((i * 7919 + w * 104_729 + users as usize * 31) % 1000) as f64 / 1000.0;
            1.0 + 0.01 * (x - 0.5)
        };
        SideCell {
            scenario: "waiter".into(),
            users,
            level: share.into(),
            rate_per_s: 1000.0,
            window_s: 1.0,
            windows: rounds * windows,
            round_windows: vec![windows as u32; rounds],
            looks: Looks {
                rounds: vec![rounds as u32],
                planned: 1,
                ..Looks::default()
            },
            runtimes: costs
                .iter()
                .enumerate()
                .map(|(i, (name, us))| SideRuntime {
                    runtime: (*name).to_owned(),
                    window_cpu_ns: (0..rounds * windows)
                        .map(|w| (us * 1e6 * wobble(i, w)) as u64)
                        .collect(),
                    window_requests: vec![1000; rounds * windows],
                    requests: (1000 * rounds * windows) as u64,
                    cpu_us_per_request: *us,
                    ..SideRuntime::default()
                })
                .collect(),
            ..SideCell::default()
        }
    }

    fn pool(cells: &[SideCell]) -> PooledVerdict {
        let levels: Vec<(&SideCell, Vec<Comparison>)> = cells
            .iter()
            .map(|c| {
                (
                    c,
                    super::super::efficiency::judge_level(c, "memory", &Rule::default()).0,
                )
            })
            .collect();
        pool_scenario("waiter", &levels, "memory", &Rule::default()).unwrap()
    }

    #[test]
    fn the_same_gap_at_every_level_pools_into_one_decided_answer() {
        let costs = [("near", 25.2), ("lean", 25.0), ("heavy", 27.5)];
        let cells: Vec<SideCell> = [(10, "40%"), (10, "80%"), (20, "40%"), (20, "80%")]
            .iter()
            .map(|&(users, share)| level(users, share, &costs, 4))
            .collect();
        let p = pool(&cells);
        assert_eq!(p.levels.len(), 4);
        assert_eq!(p.levels[0], "10 users at 40%");
        let of = |b: &str| p.comparisons.iter().find(|c| c.b == b).unwrap();
        assert!(p
            .comparisons
            .iter()
            .all(|c| c.a == "lean" && c.simultaneous));
        assert_eq!(
            of("heavy").outcome,
            brigade_stats::Outcome::Win,
            "{:?}",
            of("heavy")
        );
        assert_eq!(of("heavy").samples, 4, "four levels");
        assert!(
            of("heavy").sentence.contains("4 levels"),
            "{}",
            of("heavy").sentence
        );
        let leader = p.leader.clone().unwrap();
        assert!(leader.decided, "{p:?}");
        assert!(p.order_changes.is_empty(), "{:?}", p.order_changes);
        // Requests per CPU-second: 10⁶ / 25 µs.
        let lean = p.per_core.iter().find(|c| c.runtime == "lean").unwrap();
        assert!((lean.hits_per_cpu_s - 40_000.0).abs() < 1.0, "{lean:?}");
    }

    #[test]
    fn a_gap_that_turns_between_levels_widens_the_pooled_interval_and_names_where() {
        // x is 6% cheaper than y at 10 users and 6% dearer at 20: over the levels, no order.
        let cells = vec![
            level(10, "40%", &[("x", 25.0), ("y", 26.5), ("z", 30.0)], 4),
            level(10, "80%", &[("x", 25.0), ("y", 26.5), ("z", 30.0)], 4),
            level(20, "40%", &[("x", 26.5), ("y", 25.0), ("z", 30.0)], 4),
            level(20, "80%", &[("x", 26.5), ("y", 25.0), ("z", 30.0)], 4),
        ];
        let p = pool(&cells);
        let pair = p
            .comparisons
            .iter()
            .find(|c| (c.a == "x" && c.b == "y") || (c.a == "y" && c.b == "x"))
            .unwrap();
        assert_eq!(pair.outcome, brigade_stats::Outcome::Undecided, "{pair:?}");
        assert!(!p.leader.clone().unwrap().decided);
        assert_eq!(p.order_changes.len(), 2, "{:?}", p.order_changes);
        assert!(
            p.order_changes[0].contains("users at"),
            "{:?}",
            p.order_changes
        );
        assert!(p.interaction.unwrap() > 10.0, "{:?}", p.interaction);
    }

    #[test]
    fn a_level_that_cannot_be_judged_is_left_out_and_says_why() {
        let costs = [("lean", 25.0), ("heavy", 27.5)];
        let mut cells: Vec<SideCell> = [(10, "40%"), (20, "40%"), (30, "40%")]
            .iter()
            .map(|&(users, share)| level(users, share, &costs, 4))
            .collect();
        cells[2].not_judged = Some("generator-bound: the generator CPUs were saturated".into());
        let p = pool(&cells);
        assert_eq!(p.levels, ["10 users at 40%", "20 users at 40%"]);
        assert_eq!(p.left_out.len(), 1);
        assert!(p.left_out[0].starts_with("30 users at 40%: generator-bound"));
    }

    #[test]
    fn a_runtime_under_two_labels_is_judged_against_itself_from_the_pooled_intervals() {
        let costs = [("hyper", 25.0), ("axum", 26.0), ("hyper#2", 25.9)];
        let cells: Vec<SideCell> = [(10, "40%"), (10, "80%"), (20, "40%")]
            .iter()
            .map(|&(users, share)| level(users, share, &costs, 4))
            .collect();
        let p = pool(&cells);
        assert_eq!(p.pairs.len(), 1, "{:?}", p.pairs);
        let pair = &p.pairs[0];
        assert_eq!((pair.a.as_str(), pair.b.as_str()), ("hyper", "hyper#2"));
        assert!(pair.ratio.unwrap() > 1.03, "{pair:?}");
        assert!(matches!(
            pair.outcome,
            brigade_stats::Outcome::Win | brigade_stats::Outcome::Ahead
        ));
    }

    #[test]
    fn one_level_is_the_scenarios_answer_as_it_stands() {
        let cells = vec![level(10, "60%", &[("lean", 25.0), ("heavy", 27.5)], 4)];
        let p = pool(&cells);
        assert_eq!(p.levels, ["10 users at 60%"]);
        assert_eq!(p.comparisons.len(), 1);
        assert_eq!(
            p.comparisons[0].level.as_deref(),
            Some("60%"),
            "the level's own"
        );
        assert!(p.leader.unwrap().decided);
        assert_eq!(p.interaction, None);
    }
}
