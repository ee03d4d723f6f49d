//! A scenario's answer pooled over its levels: every runtime's cost relative to the others
//! estimated from all the scenario's levels (users × load) and rounds together, with intervals
//! simultaneous over every pair of runtimes.
//!
//! **The model.** At level `l` a runtime's cost is `log c = μ_runtime + λ_level + γ_runtime×level +
//! ε`, where the level effect λ (more users, more load: every runtime pays it) cancels in every
//! difference, γ is how much a runtime's gap to the others moves from level to level (the
//! interaction), and ε is the rounds' noise (fresh servers, the machine). The answer a user asks
//! for is the gap over the scenario's levels, `μ_a − μ_b`. It is read from each runtime's mean
//! log cost at each level (the mean over that level's rounds, so a level with more rounds is no
//! heavier than another): a two-way table, runtimes × levels, analysed with the levels as blocks.
//! Its residual (what the additive runtime + level fit leaves) holds **both** the interaction and
//! the rounds' noise (`σ_γ² + σ²/R`), with (L − 1)(k − 1) degrees of freedom, and Tukey's
//! studentized range on it gives intervals that hold for every pair at once — the textbook mixed
//! model for a randomized complete block design with random blocks and fixed treatments, where the
//! treatment × block interaction is the error term (Montgomery, *Design and Analysis of
//! Experiments*, §4.1 and §14.2; Hsu 1996, ch. 5). So where a runtime's gap changes with the users
//! or the load, the interval widens by exactly that much instead of averaging it away; where it
//! does not, L levels of R rounds narrow it as L·R rounds of one level would.
//!
//! **How much interaction.** The residual variance of a cell of the table is compared with what the
//! rounds alone explain (each level's own residual variance over its rounds, divided by its
//! rounds): [`OverLevels::interaction`] is their ratio, about 1 when the gaps are the same at
//! every level and larger when they move. It is reported, never used to narrow anything.
//!
//! Why not a random-effects meta-analysis of each pair's per-level estimates: with five or six
//! levels its between-level variance has four or five degrees of freedom per pair, and the
//! simultaneous quantile over 28 pairs on so few is wider than the pooled two-way residual with
//! (L − 1)(k − 1) degrees; the two-way table assumes every pair's interaction alike, which the A/A
//! and planted runs calibrate.

use crate::rounds::{all_pairs, Simultaneous};

/// Every pair of runtimes' cost ratio pooled over a scenario's levels.
#[derive(Debug, Clone, PartialEq)]
pub struct OverLevels {
    /// The intervals: `log_cost` is each runtime's mean over the levels, `rounds` the levels.
    pub simultaneous: Simultaneous,
    /// The table's residual variance over what the rounds' noise alone explains (≈ 1 when every
    /// gap is the same at every level); None without the levels' own noise.
    pub interaction: Option<f64>,
}

/// Pools `level_means[i][l]` (runtime i's mean log cost at level l, over that level's rounds) over
/// the levels, with intervals simultaneous over every pair at `confidence`. `noise[l]`, when
/// known, is the variance of one runtime's level mean from level l's rounds alone (its residual
/// variance over its rounds, divided by them), for [`OverLevels::interaction`]. None with fewer
/// than two runtimes or two levels (see [`all_pairs`]).
pub fn over_levels(level_means: &[Vec<f64>], noise: &[f64], confidence: f64) -> Option<OverLevels> {
    let simultaneous = all_pairs(level_means, None, confidence)?;
    let levels = simultaneous.rounds as f64;
    // half_width = critical · s · sqrt(2 / L), s² the table's residual variance.
    let residual = (simultaneous.half_width / simultaneous.critical).powi(2) * levels / 2.0;
    let known: Vec<f64> = noise
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let interaction = (!known.is_empty() && known.len() == noise.len())
        .then(|| residual / (known.iter().sum::<f64>() / known.len() as f64));
    Some(OverLevels {
        simultaneous,
        interaction,
    })
}

/// The variance of one runtime's mean over `s.rounds` rounds, from a level's own analysis: the
/// `noise` [`over_levels`] compares the table's residual with.
pub fn mean_noise(s: &Simultaneous) -> f64 {
    // half_width = critical · σ · sqrt(2 / R), and a mean over R rounds has variance σ² / R.
    (s.half_width / s.critical).powi(2) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::Noise;

    /// A scenario of `levels` levels × `rounds` rounds × `k` runtimes, runtime i costing
    /// `gaps[i]` (log) more than the first, an interaction of spread `interaction` per runtime and
    /// level, a round effect shared within a round, and per-server noise `noise`. Returns the
    /// level means and each level's own noise of a mean.
    fn scenario(
        gaps: &[f64],
        levels: usize,
        rounds: usize,
        interaction: f64,
        noise: f64,
        seed: u64,
    ) -> (Vec<Vec<f64>>, Vec<f64>) {
        let mut rng = Noise::seeded(seed);
        let k = gaps.len();
        let mut means = vec![Vec::new(); k];
        let mut noises = Vec::new();
        for l in 0..levels {
            let level_effect = 0.3 * l as f64;
            let gamma: Vec<f64> = (0..k).map(|_| interaction * rng.gaussian()).collect();
            let table: Vec<Vec<f64>> = (0..k)
                .map(|i| {
                    (0..rounds)
                        .map(|_| gaps[i] + level_effect + gamma[i] + noise * rng.gaussian())
                        .collect()
                })
                .collect();
            // A round effect shared by every runtime of the round: it must cancel.
            let shared: Vec<f64> = (0..rounds).map(|_| 0.05 * rng.gaussian()).collect();
            let table: Vec<Vec<f64>> = table
                .into_iter()
                .map(|row| row.iter().zip(&shared).map(|(y, s)| y + s).collect())
                .collect();
            let own = all_pairs(&table, None, 0.95).unwrap();
            noises.push(mean_noise(&own));
            for (i, row) in table.iter().enumerate() {
                means[i].push(row.iter().sum::<f64>() / rounds as f64);
            }
        }
        (means, noises)
    }

    /// Whether every pair's interval holds its true gap (the statement as a whole).
    fn covers(pooled: &OverLevels, gaps: &[f64]) -> bool {
        let s = &pooled.simultaneous;
        (0..gaps.len()).all(|a| {
            (0..gaps.len()).all(|b| {
                let estimate = s.log_cost[b] - s.log_cost[a];
                (estimate - (gaps[b] - gaps[a])).abs() <= s.half_width
            })
        })
    }

    #[test]
    fn pooling_six_levels_narrows_the_interval_and_covers_at_its_confidence() {
        // Eight runtimes, one 3% dearer; six levels of eight rounds; 1% per-server noise; no
        // interaction. The statement over all 28 pairs holds in about 95% of scenarios.
        let gaps = [0.0, 0.0, 0.0, 0.03, 0.0, 0.0, 0.0, 0.0];
        let trials = 300;
        let mut held = 0;
        let mut widths = Vec::new();
        for seed in 0..trials {
            let (means, noise) = scenario(&gaps, 6, 8, 0.0, 0.01, 1000 + seed);
            let pooled = over_levels(&means, &noise, 0.95).unwrap();
            held += usize::from(covers(&pooled, &gaps));
            widths.push(pooled.simultaneous.half_width);
            // Without interaction the table's residual is the rounds' noise.
            let f = pooled.interaction.unwrap();
            assert!(f > 0.3 && f < 3.0, "interaction {f} without any");
        }
        let rate = held as f64 / trials as f64;
        let median = crate::summary::median(&widths);
        eprintln!("no interaction: covered {rate}, median half-width {median}");
        assert!(rate >= 0.92, "covered in {rate} of scenarios at 95%");
        // One level's own half-width at the same noise, for the comparison.
        let (_, one_noise) = scenario(&gaps, 1, 8, 0.0, 0.01, 7);
        let critical = crate::rounds::studentized_range_quantile(8, 7 * 7, 0.95, 1) / 2f64.sqrt();
        let one_level = critical * (2.0 * one_noise[0]).sqrt();
        assert!(
            median < 0.6 * one_level,
            "six levels pooled {median} against one level's {one_level}"
        );
    }

    #[test]
    fn a_gap_that_moves_between_levels_widens_the_interval_and_shows_as_interaction() {
        let gaps = [0.0, 0.02, 0.0, 0.0];
        let trials = 300;
        let mut held = 0;
        let (mut quiet, mut moving) = (Vec::new(), Vec::new());
        for seed in 0..trials {
            let (means, noise) = scenario(&gaps, 6, 8, 0.0, 0.01, 5000 + seed);
            quiet.push(over_levels(&means, &noise, 0.95).unwrap());
            let (means, noise) = scenario(&gaps, 6, 8, 0.02, 0.01, 9000 + seed);
            let pooled = over_levels(&means, &noise, 0.95).unwrap();
            // The target is the mean gap over the levels measured (their γ averaged in): the
            // interval covers the population gap at least as often.
            held += usize::from(covers(&pooled, &gaps));
            moving.push(pooled);
        }
        let median = |v: &[OverLevels], f: &dyn Fn(&OverLevels) -> f64| {
            crate::summary::median(&v.iter().map(f).collect::<Vec<_>>())
        };
        let width = |p: &OverLevels| p.simultaneous.half_width;
        let inter = |p: &OverLevels| p.interaction.unwrap();
        assert!(
            median(&moving, &width) > 1.5 * median(&quiet, &width),
            "an interaction widens: {} against {}",
            median(&moving, &width),
            median(&quiet, &width)
        );
        eprintln!(
            "interaction 2%: covered {held}/{trials}, half-width {} against {}, F {} against {}",
            median(&moving, &width),
            median(&quiet, &width),
            median(&moving, &inter),
            median(&quiet, &inter)
        );
        assert!(median(&moving, &inter) > 4.0 * median(&quiet, &inter));
        assert!(
            held as f64 / trials as f64 >= 0.92,
            "covered {held} of {trials}"
        );
    }

    #[test]
    fn one_level_or_one_runtime_pools_nothing() {
        assert!(over_levels(&[vec![0.1], vec![0.2]], &[0.001], 0.95).is_none());
        assert!(over_levels(&[vec![0.1, 0.2]], &[0.001, 0.001], 0.95).is_none());
        let pooled = over_levels(&[vec![0.1, 0.2], vec![0.2, 0.3], vec![0.0, 0.1]], &[], 0.95);
        assert_eq!(
            pooled.unwrap().interaction,
            None,
            "no noise given, none claimed"
        );
    }
}
