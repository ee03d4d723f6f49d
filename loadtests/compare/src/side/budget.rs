//! `--budget`: after every cell's first look, more rounds for the levels still open, those nearest
//! to deciding first, until the budget is spent.
//!
//! A level's first look was judged at its share of the error rate (`judge::efficiency::look_confidence`);
//! the rounds added here are judged once more, at the rest of it, on all its rounds together — so
//! stopping where the first look decided keeps the stated confidence (Bonferroni across two
//! looks). Every runtime of the cell is started afresh in an added round, not only the ones still
//! open, so the level's load on the server CPUs stays the one it names, and every round stays a
//! complete block for the analysis; rounds are added in whole cycles of the rotation (a multiple
//! of the runtimes), so every runtime keeps every place in the order equally often. A level that no affordable number of rounds would likely
//! decide is not extended, and says so.

use std::ops::Range;
use std::time::{Duration, Instant};

use brigade_records::side::SideCell;

use super::{more_rounds, CellPlan, MAX_ROUNDS};
use crate::measure::Bench;
use brigade_report::ServerRecord;

/// What a level still open would need: None when decided (or not judged); else the rounds in all
/// that would likely decide it, or why none within the given most would.
pub(crate) type Need<'a> = dyn Fn(&SideCell, u32) -> Option<Result<u32, String>> + 'a;

/// One cell's levels to extend, and by how many rounds.
struct Extension {
    /// Index into the cells run.
    cell: usize,
    /// Indices of its levels, among its own.
    levels: Vec<usize>,
    /// Rounds to add.
    rounds: u32,
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
    let mut queue = Vec::new();
    for (i, (_, range)) in ran.iter().enumerate() {
        let mut extension = Extension {
            cell: i,
            levels: Vec::new(),
            rounds: 0,
        };
        for (level, cell) in cells[range.clone()].iter_mut().enumerate() {
            let rounds = cell.rounds().len() as u32;
            match need(cell, MAX_ROUNDS) {
                None => {}
                Some(Ok(total)) => {
                    extension.levels.push(level);
                    extension.rounds = extension.rounds.max(total.saturating_sub(rounds).max(1));
                }
                Some(Err(why)) => cell.looks.stopped = Some(why),
            }
        }
        if !extension.levels.is_empty() {
            // Whole cycles of the rotation, so every runtime keeps every place equally often.
            let k = bench.settings.runtimes.len().max(1) as u32;
            extension.rounds = extension.rounds.div_ceil(k) * k;
            queue.push(extension);
        }
    }
    queue.sort_by_key(|e| e.rounds);
    let per_level_s =
        side.warmup.as_secs_f64() + f64::from(side.windows * side.window_s.max(1)) + 0.6;
    let mut left = side.budget;
    for extension in queue {
        let (plan, range) = &ran[extension.cell];
        let mine = &mut cells[range.clone()];
        let round_s = 2.0 + per_level_s * extension.levels.len() as f64;
        let cost = Duration::from_secs_f64(round_s * f64::from(extension.rounds));
        if cost > left {
            for &level in &extension.levels {
                mine[level].looks.stopped = Some(format!(
                    "would need about {} more rounds (~{:.0} s); the budget had {:.0} s left",
                    extension.rounds,
                    cost.as_secs_f64(),
                    left.as_secs_f64()
                ));
            }
            continue;
        }
        println!(
            "side by side {} {} users: {} more rounds for the open levels (budget {:.0} s left)",
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
            extension.rounds,
        ));
        left = left.saturating_sub(started.elapsed());
    }
    records
}
