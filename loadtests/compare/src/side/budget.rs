//! `--budget`: after every cell's first look, more rounds for the levels still open, those nearest
//! to deciding first, until the budget is spent.
//!
//! A level's first look was judged at its share of the error rate (`judge::efficiency::look_confidence`);
//! the rounds added here are judged once more, at the rest of it — so stopping where the first
//! look decided keeps the stated confidence (Bonferroni across two looks).
//!
//! The added rounds run only the runtimes still in question: the best of each open level and
//! those undecided against it (the cell's open levels' together). Their fresh servers fill every
//! place of the round — with eight runtimes and two contenders, four copies of each — each driven
//! at the level's rate, so every server runs at the level's per-server rate and the server CPUs
//! carry as many servers as the level names (their busy share is the contenders' cost at that
//! rate, measured and reported as every round's is). A contender's copies in a round are pooled
//! into its value there, so each added round is a complete block of the contenders (blocks filled
//! with copies), and a round of four copies is worth about four of one: fewer rounds decide. The
//! second look judges the contenders on every round; the other runtimes keep the first look's
//! verdicts (`judge::efficiency::judge_split`). Where copies cannot be made (an external server)
//! or would leave nobody out, every runtime runs once per added round, in whole cycles of the
//! rotation. A level that no affordable number of rounds would likely decide is not extended, and
//! says so.

use std::ops::Range;
use std::time::{Duration, Instant};

use brigade_records::side::{Open, SideCell};

use super::{later_round, start_servers, stop_all, CellPlan, MAX_ROUNDS};
use crate::measure::Bench;
use crate::phases::Phase;
use brigade_report::ServerRecord;

/// What a level still open would need: None when decided (or not judged); else the rounds in all
/// (one server of each runtime per round) that would likely decide it and the runtimes still in
/// question, or why none within the given most would.
pub(crate) type Need<'a> = dyn Fn(&SideCell, u32) -> Option<Result<Open, String>> + 'a;

/// One cell's levels to extend, and how.
struct Extension {
    /// Index into the cells run.
    cell: usize,
    /// Indices of its levels, among its own.
    levels: Vec<usize>,
    /// Rounds to add.
    rounds: u32,
    /// The runtimes the added rounds run, in copies that fill every place (the open levels'
    /// contenders together); empty: every runtime once.
    contenders: Vec<String>,
}

/// How the added rounds of a cell are run, from its open levels' rounds so far and needs:
/// the contenders only, each in `places / contenders` copies or more, when that leaves out a
/// runtime (and every server is started by compare: an external one cannot be copied); else every
/// runtime, in whole cycles of the rotation. The rounds are those that would likely decide the
/// open level that needs most, with copies counted at what they are worth ([`extension_rounds`]).
fn plan_extension(
    open: &[(u32, Open)],
    runtimes: usize,
    copies_allowed: bool,
) -> (u32, Vec<String>) {
    let mut contenders: Vec<String> = Vec::new();
    for (_, need) in open {
        for name in &need.contenders {
            if !contenders.contains(name) {
                contenders.push(name.clone());
            }
        }
    }
    let k = runtimes.max(1) as u32;
    let m = contenders.len() as u32;
    if copies_allowed && m >= 2 && m < k {
        let copies = k / m;
        let rounds = open
            .iter()
            .map(|(had, need)| extension_rounds(*had, need.rounds, copies))
            .max()
            .unwrap_or(1);
        // Every contender gets the extra copy equally often when the places do not divide evenly.
        let rounds = if k.is_multiple_of(m) {
            rounds
        } else {
            rounds.div_ceil(m) * m
        };
        return (rounds, contenders);
    }
    let rounds = open
        .iter()
        .map(|(had, need)| need.rounds.saturating_sub(*had).max(1))
        .max()
        .unwrap_or(1);
    (rounds.div_ceil(k) * k, Vec::new())
}

/// Rounds of `copies` servers per contender to add to `had` rounds of one server each so that the
/// contenders' mean differences are as precise as `needed` rounds of one server each would make
/// them: a round's value is its copies' mean, its variance the instance variance ÷ copies, and the
/// analysis weighs every round alike, so the smallest `e` with `(had + e / copies) / (had + e)² ≤
/// 1 / needed`. At most [`MAX_ROUNDS`].
pub(crate) fn extension_rounds(had: u32, needed: u32, copies: u32) -> u32 {
    let (r, n, c) = (f64::from(had), f64::from(needed), f64::from(copies.max(1)));
    (1..=MAX_ROUNDS)
        .find(|&e| {
            let e = f64::from(e);
            n * (r + e / c) <= (r + e) * (r + e)
        })
        .unwrap_or(MAX_ROUNDS)
}

/// Spends `bench.settings.side.budget` on more rounds of the open levels of `ran` (each cell's
/// plan, with its levels' range in `cells`), nearest to deciding first. Returns the servers'
/// records.
pub(crate) fn spend(
    bench: &Bench<'_>,
    ran: &[(CellPlan<'_>, Range<usize>)],
    cells: &mut [SideCell],
    need: &Need<'_>,
) -> Vec<ServerRecord> {
    let side = &bench.settings.side;
    let mut records = Vec::new();
    if side.budget.is_zero() {
        return records;
    }
    let k = bench.settings.runtimes.len().max(1) as u32;
    let copies_allowed = bench.settings.external.is_empty() && side.rounds >= 2;
    let queue = extensions(ran, cells, need, k, copies_allowed);
    let per_level_s =
        side.warmup.as_secs_f64() + f64::from(side.windows * side.window_s.max(1)) + 0.6;
    let mut left = side.budget;
    for extension in queue {
        let (plan, range) = &ran[extension.cell];
        let mine = &mut cells[range.clone()];
        let round_s = 2.0 + per_level_s * extension.levels.len() as f64;
        let cost = Duration::from_secs_f64(round_s * f64::from(extension.rounds));
        let who = if extension.contenders.is_empty() {
            "every runtime".to_owned()
        } else {
            format!(
                "{} (filling the {k} places)",
                extension.contenders.join(", ")
            )
        };
        if cost > left {
            for &level in &extension.levels {
                mine[level].looks.stopped = Some(format!(
                    "would need about {} more rounds of {who} (~{:.0} s); the budget had {:.0} s \
                     left",
                    extension.rounds,
                    cost.as_secs_f64(),
                    left.as_secs_f64()
                ));
            }
            continue;
        }
        println!(
            "side by side {} {} users: {} more rounds of {who} for the open levels (budget {:.0} s \
             left)",
            plan.label,
            plan.users,
            extension.rounds,
            left.as_secs_f64()
        );
        let started = Instant::now();
        records.extend(more_rounds(
            bench,
            plan,
            mine,
            &extension.levels,
            (extension.rounds, &extension.contenders),
        ));
        left = left.saturating_sub(started.elapsed());
    }
    records
}

/// The extensions the open levels of `ran` ask for, nearest to deciding first: per cell the rounds
/// its open levels need and the runtimes to run (`k` runtimes; copies only where
/// `copies_allowed`). A level that needs none is left as it is; one that cannot be extended, or
/// would pass [`MAX_ROUNDS`], records why it stopped.
fn extensions(
    ran: &[(CellPlan<'_>, Range<usize>)],
    cells: &mut [SideCell],
    need: &Need<'_>,
    k: u32,
    copies_allowed: bool,
) -> Vec<Extension> {
    let mut queue = Vec::new();
    for (i, (_, range)) in ran.iter().enumerate() {
        let mut levels = Vec::new();
        let mut open = Vec::new();
        for (level, cell) in cells[range.clone()].iter_mut().enumerate() {
            match need(cell, MAX_ROUNDS * k) {
                None => {}
                Some(Ok(needs)) => {
                    levels.push(level);
                    open.push((cell.rounds().len() as u32, needs));
                }
                Some(Err(why)) => cell.looks.stopped = Some(why),
            }
        }
        if levels.is_empty() {
            continue;
        }
        let (rounds, contenders) = plan_extension(&open, k as usize, copies_allowed);
        let had = open.iter().map(|(had, _)| *had).max().unwrap_or(0);
        if had + rounds > MAX_ROUNDS {
            for &level in &levels {
                cells[range.start + level].looks.stopped = Some(format!(
                    "would need about {rounds} more rounds, past the {MAX_ROUNDS} a level may run"
                ));
            }
            continue;
        }
        queue.push(Extension {
            cell: i,
            levels,
            rounds,
            contenders,
        });
    }
    queue.sort_by_key(|e| e.rounds);
    queue
}

/// `rounds` more rounds of the levels `which` of a cell whose first look left them open (the
/// budget's), the levels at the rates the first round settled on: fresh servers of every runtime
/// each round, or, when `contenders` names some, fresh copies of those alone filling every place
/// ([`places`]). Records the second look on each level extended.
fn more_rounds(
    bench: &Bench<'_>,
    plan: &CellPlan<'_>,
    cells: &mut [SideCell],
    which: &[usize],
    (rounds, contenders): (u32, &[String]),
) -> Vec<ServerRecord> {
    let _budget = bench.phases.timer(Phase::Budget);
    let mut records = Vec::new();
    let first = cells
        .iter()
        .map(|c| c.rounds().len() as u32)
        .max()
        .unwrap_or(0);
    for round in first..(first + rounds).min(MAX_ROUNDS) {
        let roster = places(&bench.settings.runtimes, contenders, round);
        let servers = match start_servers(bench, plan, round, &roster) {
            Ok(servers) => servers,
            Err(err) => {
                println!("  more rounds: servers not started: {err:#}");
                break;
            }
        };
        let _ = later_round(bench, plan, &servers, cells, which, round);
        records.extend(stop_all(bench, servers));
    }
    for &i in which {
        let cell = &mut cells[i];
        let total = cell.rounds().len() as u32;
        if cell.looks.rounds.last() != Some(&total) {
            cell.looks.rounds.push(total);
        }
        cell.looks.contenders = contenders.to_vec();
    }
    records
}

/// A round's servers in their order: each runtime once, or, when `contenders` names some, the
/// contenders alone filling the places of all (place `p` to contender `(p + round) mod m`, so
/// where the places do not divide evenly the extra copy moves round by round). Each entry: the
/// runtime's label and which copy it is (0, 1, …).
fn places(runtimes: &[String], contenders: &[String], round: u32) -> Vec<(String, u32)> {
    if contenders.is_empty() {
        return runtimes.iter().map(|label| (label.clone(), 0)).collect();
    }
    let mut copies = vec![0u32; contenders.len()];
    (0..runtimes.len())
        .map(|p| {
            let c = (p + round as usize) % contenders.len();
            copies[c] += 1;
            (contenders[c].clone(), copies[c] - 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(rounds: u32, contenders: &[&str]) -> Open {
        Open {
            rounds,
            contenders: contenders.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    #[test]
    fn copies_of_the_contenders_decide_in_fewer_rounds_than_whole_rounds_would() {
        // 8 rounds had, 32 of one server each needed: two contenders in four copies each get
        // there in 11 rounds, not 24.
        assert_eq!(extension_rounds(8, 32, 4), 11);
        assert_eq!(extension_rounds(8, 32, 1), 24);
        // Already enough: one round, the least an extension adds.
        assert_eq!(extension_rounds(8, 8, 4), 1);
        let (rounds, who) = plan_extension(&[(8, open(32, &["best", "second"]))], 8, true);
        assert_eq!((rounds, who.len()), (11, 2));
    }

    #[test]
    fn the_open_levels_contenders_run_together_and_uneven_copies_rotate_evenly() {
        let open = [
            (8, open(20, &["best", "second"])),
            (8, open(12, &["best", "third"])),
        ];
        let (rounds, who) = plan_extension(&open, 8, true);
        assert_eq!(who, ["best", "second", "third"]);
        // Three contenders in eight places: two copies at least, rounds in multiples of three.
        assert_eq!(rounds % 3, 0);
        assert!(rounds >= extension_rounds(8, 20, 2));
    }

    #[test]
    fn every_runtime_runs_when_copies_are_not_allowed_or_leave_no_one_out() {
        let (rounds, who) = plan_extension(&[(8, open(12, &["best", "second"]))], 8, false);
        assert!(who.is_empty());
        assert_eq!(rounds, 8, "4 more rounds, in a whole cycle of eight");
        let (_, who) = plan_extension(&[(4, open(12, &["a", "b"]))], 2, true);
        assert!(
            who.is_empty(),
            "two runtimes, both contenders: nothing to leave out"
        );
    }

    #[test]
    fn contenders_fill_every_place_and_the_extra_copy_moves_round_by_round() {
        let runtimes: Vec<String> = ["a", "b", "c", "d", "e", "f", "g", "h"]
            .iter()
            .map(|r| (*r).to_owned())
            .collect();
        let every = places(&runtimes, &[], 3);
        assert_eq!(every.len(), 8);
        assert!(every.iter().all(|(_, copy)| *copy == 0));
        let two = ["a".to_owned(), "d".to_owned()];
        let round = places(&runtimes, &two, 0);
        assert_eq!(round.len(), 8);
        assert_eq!(round.iter().filter(|(l, _)| l == "a").count(), 4);
        let copies: Vec<u32> = round
            .iter()
            .filter(|(l, _)| l == "d")
            .map(|(_, c)| *c)
            .collect();
        assert_eq!(copies, [0, 1, 2, 3]);
        // Three in eight places: 3, 3, 2, the two moving; over three rounds each has 8.
        let three = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let mut total = [0; 3];
        for round in 0..3 {
            for (label, _) in places(&runtimes, &three, round) {
                total[three.iter().position(|t| *t == label).unwrap()] += 1;
            }
        }
        assert_eq!(total, [8, 8, 8]);
    }
}
