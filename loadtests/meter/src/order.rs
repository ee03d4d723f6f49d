//! The order of isolated runs: every runtime × scenario × users × preload × repeat, each a run of
//! its own on a fresh server, ordered so that verdicts can pair runs.
//!
//! The runs of one cell (scenario × users × preload) within a repeat are made back to back, one per
//! runtime, so whatever drifts over a comparison (the machine warming, a neighbour's load) moves
//! both sides of a pair alike. The runtime that goes first rotates by one from cell to cell, so no
//! runtime always runs first (on a cold cache) or last. Cells go repeat by repeat, then scenario,
//! users and preload, the preload innermost: the same load at different data sizes runs as close
//! together in time as the runtimes allow, which is what a "flat with data size" reading needs.

/// One measured run to make.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Planned {
    /// Which repeat (0-based).
    pub repeat: u32,
    /// Index into the runtimes.
    pub runtime: usize,
    /// Index into the scenarios.
    pub scenario: usize,
    /// Closed-loop users.
    pub users: u32,
    /// Documents per collection preloaded before the fixtures.
    pub preload: u64,
    /// Open loop at this rate, requests/s, instead of the comparison's `--rate` (an SLO
    /// search's step).
    pub rate: Option<f64>,
}

/// Rotates `0..n` left by `by`.
fn rotated(n: usize, by: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| (i + by) % n.max(1))
}

/// Every run, in the order to make them.
pub fn plan(
    runtimes: usize,
    scenarios: usize,
    users: &[u32],
    preloads: &[u64],
    repeat: u32,
) -> Vec<Planned> {
    let mut runs = Vec::new();
    let mut cell = 0;
    for repeat in 0..repeat {
        for scenario in 0..scenarios {
            for &users in users {
                for &preload in preloads {
                    for runtime in rotated(runtimes, cell) {
                        runs.push(Planned {
                            repeat,
                            runtime,
                            scenario,
                            users,
                            preload,
                            rate: None,
                        });
                    }
                    cell += 1;
                }
            }
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_combination_is_run_once_per_repeat() {
        let runs = plan(3, 2, &[10, 20], &[0, 1_000], 2);
        assert_eq!(runs.len(), 3 * 2 * 2 * 2 * 2);
        let distinct: BTreeSet<(u32, usize, usize, u32, u64)> = runs
            .iter()
            .map(|p| (p.repeat, p.runtime, p.scenario, p.users, p.preload))
            .collect();
        assert_eq!(distinct.len(), runs.len());
    }

    #[test]
    fn the_runs_of_a_cell_are_back_to_back_and_the_first_runtime_rotates() {
        let runs = plan(3, 2, &[10, 20], &[0, 1_000], 2);
        for cell in runs.chunks(3) {
            let mut who: Vec<usize> = cell.iter().map(|p| p.runtime).collect();
            who.sort_unstable();
            assert_eq!(who, vec![0, 1, 2]);
            assert!(cell.iter().all(|p| p.scenario == cell[0].scenario
                && p.users == cell[0].users
                && p.preload == cell[0].preload
                && p.repeat == cell[0].repeat));
        }
        let firsts: Vec<usize> = runs.chunks(3).map(|cell| cell[0].runtime).collect();
        assert_eq!(&firsts[..5], &[0, 1, 2, 0, 1]);
        // The rotation carries on into the next repeat instead of restarting.
        assert_eq!(firsts[8], 8 % 3);
    }

    #[test]
    fn the_preload_is_the_innermost_dimension() {
        let runs = plan(2, 1, &[10], &[1_000, 1_000_000], 1);
        let preloads: Vec<u64> = runs.iter().map(|p| p.preload).collect();
        assert_eq!(preloads, vec![1_000, 1_000, 1_000_000, 1_000_000]);
        assert_eq!(runs[0].runtime, 0);
        assert_eq!(runs[2].runtime, 1, "rotated for the next cell");
    }
}
