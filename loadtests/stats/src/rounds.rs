//! Intervals from rounds: every runtime of a cell measured on fresh servers, several times over,
//! and every pairwise cost ratio given an interval that holds for all pairs at once.
//!
//! Why rounds: two fresh servers of one runtime differ by about 0.7% in cost (where the process
//! landed in memory, which core state it met), an effect shared by every window of that server.
//! Windows of one pair of servers can therefore never cover it, however many are taken: an
//! interval from windows alone covered 81% at a stated 95% in calibration. A round (fresh servers
//! of every runtime, measured side by side for a few windows) is the unit that carries it.
//!
//! The analysis is the textbook one for a randomized complete block design: the log of each
//! runtime's cost in each round (the mean log cost over the round's windows, so the ratio of two
//! is the geometric mean of their paired window ratios) is `μ_runtime + β_round + e`. The round
//! effect β (what the machine did during that round) cancels in every difference, as the window's
//! does within a round; the residual variance σ² pools every runtime's scatter around that model
//! with (R − 1)(k − 1) degrees of freedom. Each difference of two runtimes' means then has
//! standard error σ·sqrt(2/R), and Tukey's studentized range q gives intervals
//! `d ± q/√2 · σ·sqrt(2/R)` that hold for **every pair simultaneously** — so the best runtime
//! picked from the same data, and its comparison with each other, are covered at the stated
//! confidence as a whole (Hsu 1996, ch. 5: all-pairwise comparisons, valid for any pair chosen
//! after looking). A t-interval per pair would cover each line alone and not the cell's statement.
//!
//! **Positions.** With many servers on one CPU, the place a server takes in a round's order (which
//! generator's schedule leads, whose request the CPU meets first) can carry a cost of its own —
//! measured here with seven servers: up to +6% for the first place. Rounds rotate the order by one,
//! so when their number is a multiple of the runtimes' every runtime takes every place equally
//! often and every round fills every place once: place is then a third factor orthogonal to the
//! other two (a cyclic Latin square), its effect is estimated and removed from the residual, and
//! the residual keeps (R − 1)(k − 1) − (k − 1) degrees of freedom. Unbalanced rounds leave it in
//! the residual, where it widens the interval.
//!
//! Why not a bootstrap over rounds: with four to eight rounds a resample sees at most eight values
//! and its percentiles are far too narrow; the t-type interval carries the small number honestly
//! through its degrees of freedom. Why pooled: a per-pair variance has only R − 1 degrees of
//! freedom, and its quantile (12.7 at R = 2, 3.18 at R = 4) would triple the width; pooling
//! assumes every runtime scatters alike between rounds, which the A/A calibration checks.
//!
//! The studentized range's quantile has no closed form; it is drawn here by simulation (normal
//! draws by inverse transform from one fixed seed), so the same table gives the same interval on
//! every machine, and kept per (k, degrees, confidence) for the rest of the process.

use crate::distribution::normal_quantile;
use crate::interval::Interval;

/// Draws of the studentized range behind each critical value (its 95% quantile lands within about
/// ±0.5% of the published tables; checked in the tests below).
const RANGE_DRAWS: usize = 40_000;

/// The fewest runtimes whose places are estimated and removed (see [`all_pairs`]).
pub const MIN_RUNTIMES_FOR_PLACES: usize = 3;

/// The seed of those draws: a critical value is a property of its table, not of the data.
const RANGE_SEED: u64 = 0x0051_0DE7;

/// Simultaneous intervals for every pair of runtimes of one cell, from rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Simultaneous {
    /// Each runtime's mean log cost over the rounds, in the order given.
    pub log_cost: Vec<f64>,
    /// The half-width of every pairwise interval on the log scale.
    pub half_width: f64,
    /// The rounds the figures rest on.
    pub rounds: usize,
    /// The residual degrees of freedom, (R − 1)(k − 1), less k − 1 when places were removed.
    pub degrees: usize,
    /// Whether the effect of each place in a round's order was estimated and removed.
    pub places_removed: bool,
    /// The critical value used, q / √2.
    pub critical: f64,
    /// The confidence every interval holds at together.
    pub confidence: f64,
}

impl Simultaneous {
    /// The cost ratio `b / a` with its simultaneous interval; > 1 means `a` is cheaper.
    pub fn ratio(&self, a: usize, b: usize) -> Interval {
        let centre = self.log_cost[b] - self.log_cost[a];
        Interval {
            ratio: centre.exp(),
            ci_low: (centre - self.half_width).exp(),
            ci_high: (centre + self.half_width).exp(),
            samples: self.rounds,
            confidence: self.confidence,
        }
    }

    /// The index of the cheapest runtime: the one every interval is best read against.
    pub fn cheapest(&self) -> usize {
        self.log_cost
            .iter()
            .enumerate()
            .min_by(|x, y| x.1.total_cmp(y.1))
            .map_or(0, |(i, _)| i)
    }
}

/// Simultaneous intervals for every pairwise cost ratio of `k` runtimes over R rounds.
///
/// `costs[i][r]` is runtime i's cost in round r on the log scale (see the module text); `places`,
/// when given, `places[i][r]` its place in round r's order, removed as a factor when the rounds are
/// balanced over places. None when there are fewer than two runtimes or two rounds, when the rows
/// differ in length, when a value is not finite, or when `confidence` is not strictly between 0
/// and 1.
pub fn all_pairs(
    log_costs: &[Vec<f64>],
    places: Option<&[Vec<u32>]>,
    confidence: f64,
) -> Option<Simultaneous> {
    let k = log_costs.len();
    let r = log_costs.first()?.len();
    if k < 2
        || r < 2
        || !(confidence > 0.0 && confidence < 1.0)
        || log_costs
            .iter()
            .any(|row| row.len() != r || row.iter().any(|v| !v.is_finite()))
    {
        return None;
    }
    let runtime_mean: Vec<f64> = log_costs
        .iter()
        .map(|row| row.iter().sum::<f64>() / r as f64)
        .collect();
    let round_mean: Vec<f64> = (0..r)
        .map(|j| log_costs.iter().map(|row| row[j]).sum::<f64>() / k as f64)
        .collect();
    let grand = runtime_mean.iter().sum::<f64>() / k as f64;
    let mut residuals: Vec<Vec<f64>> = log_costs
        .iter()
        .enumerate()
        .map(|(i, row)| {
            row.iter()
                .enumerate()
                .map(|(j, y)| y - runtime_mean[i] - round_mean[j] + grand)
                .collect()
        })
        .collect();
    let mut degrees = (r - 1) * (k - 1);
    // With two runtimes the rotation alone balances the places, and removing them would cost a
    // third of the degrees of freedom at four rounds: they stay in the residual.
    let places = places.filter(|p| k >= MIN_RUNTIMES_FOR_PLACES && balanced(p, k, r));
    if let Some(places) = places {
        // Orthogonal to runtimes and rounds: a place's effect is its residuals' mean.
        let mut sums = vec![(0.0, 0usize); k];
        for (row, place) in residuals.iter().zip(places) {
            for (e, &p) in row.iter().zip(place) {
                sums[p as usize].0 += e;
                sums[p as usize].1 += 1;
            }
        }
        for (row, place) in residuals.iter_mut().zip(places) {
            for (e, &p) in row.iter_mut().zip(place) {
                let (sum, n) = sums[p as usize];
                *e -= sum / n as f64;
            }
        }
        degrees -= k - 1;
        if degrees == 0 {
            return None;
        }
    }
    let residual_ss: f64 = residuals.iter().flatten().map(|e| e * e).sum();
    let sigma = (residual_ss / degrees as f64).sqrt();
    let critical = range_critical(k, degrees, confidence);
    Some(Simultaneous {
        log_cost: runtime_mean,
        half_width: critical * sigma * (2.0 / r as f64).sqrt(),
        rounds: r,
        degrees,
        places_removed: places.is_some(),
        critical,
        confidence,
    })
}

/// Whether `places` (k runtimes × r rounds) fill every place 0..k once in every round and give
/// every runtime every place equally often: place is then orthogonal to runtime and round.
fn balanced(places: &[Vec<u32>], k: usize, r: usize) -> bool {
    if places.len() != k || places.iter().any(|p| p.len() != r) || !r.is_multiple_of(k) {
        return false;
    }
    let every_round_full = (0..r).all(|j| {
        let mut seen = vec![false; k];
        places.iter().all(|p| {
            let place = p[j] as usize;
            place < k && !std::mem::replace(&mut seen[place], true)
        })
    });
    let every_place_alike = places
        .iter()
        .all(|p| (0..k as u32).all(|place| p.iter().filter(|&&q| q == place).count() == r / k));
    every_round_full && every_place_alike
}

/// q / √2 for `k` means, `degrees` and `confidence`, computed once per process.
fn range_critical(k: usize, degrees: usize, confidence: f64) -> f64 {
    type Table = std::collections::HashMap<(usize, usize, u64), f64>;
    static KNOWN: std::sync::OnceLock<std::sync::Mutex<Table>> = std::sync::OnceLock::new();
    let key = (k, degrees, confidence.to_bits());
    let known = KNOWN.get_or_init(Default::default);
    if let Some(q) = known.lock().ok().and_then(|t| t.get(&key).copied()) {
        return q;
    }
    let q = studentized_range_quantile(k, degrees, confidence, RANGE_SEED) / 2f64.sqrt();
    if let Ok(mut table) = known.lock() {
        table.insert(key, q);
    }
    q
}

/// The `confidence` quantile of the studentized range of `k` means with `degrees` degrees of
/// freedom for the variance, by simulation from `seed`.
pub fn studentized_range_quantile(k: usize, degrees: usize, confidence: f64, seed: u64) -> f64 {
    let mut rng = fastrand::Rng::with_seed(seed);
    // Inverse transform; the open interval keeps the quantile finite.
    let mut normal = || normal_quantile(rng.f64().clamp(1e-12, 1.0 - 1e-12));
    let mut draws: Vec<f64> = (0..RANGE_DRAWS)
        .map(|_| {
            let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
            for _ in 0..k {
                let z = normal();
                low = low.min(z);
                high = high.max(z);
            }
            let chi_square: f64 = (0..degrees).map(|_| normal().powi(2)).sum();
            (high - low) / (chi_square / degrees as f64).sqrt()
        })
        .collect();
    draws.sort_by(f64::total_cmp);
    crate::bootstrap::percentile(&draws, confidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_of_two_is_students_t_and_of_seven_matches_tukeys_table() {
        // q(0.95; 2, 10) / √2 = t(0.975; 10) = 2.228; q(0.95; 7, 18) = 4.67; q(0.95; 4, 20) = 3.96.
        let two = studentized_range_quantile(2, 10, 0.95, 1) / 2f64.sqrt();
        assert!((two - 2.228).abs() < 0.03, "{two}");
        let seven = studentized_range_quantile(7, 18, 0.95, 1);
        assert!((seven - 4.67).abs() < 0.05, "{seven}");
        let four = studentized_range_quantile(4, 20, 0.95, 2);
        assert!((four - 3.96).abs() < 0.05, "{four}");
    }

    #[test]
    fn a_shared_round_effect_cancels_and_a_steady_difference_gives_a_tight_interval() {
        // Round effects of ±10% common to both runtimes; b costs 5% more in every round, with a
        // little scatter of its own.
        let rounds = [0.0, 0.1, -0.1, 0.05, -0.05];
        let a: Vec<f64> = rounds.iter().map(|b| 5.0 + b).collect();
        let scatter = [0.001, -0.002, 0.0015, -0.001, 0.0005];
        let b: Vec<f64> = rounds
            .iter()
            .zip(scatter)
            .map(|(r, s)| 5.0 + 1.05f64.ln() + r + s)
            .collect();
        let s = all_pairs(&[a, b], None, 0.95).expect("an interval");
        let iv = s.ratio(0, 1);
        assert!((iv.ratio - 1.05).abs() < 0.002, "{iv:?}");
        assert!(iv.ci_low > 1.04 && iv.ci_high < 1.06, "{iv:?}");
        assert_eq!(s.cheapest(), 0);
        assert_eq!(s.degrees, 4);
    }

    #[test]
    fn every_pair_shares_one_half_width_and_flipping_a_pair_flips_its_interval() {
        let rows = vec![
            vec![1.0, 1.1, 0.9, 1.0],
            vec![1.02, 1.1, 0.93, 1.01],
            vec![1.05, 1.16, 0.94, 1.06],
        ];
        let s = all_pairs(&rows, None, 0.95).expect("an interval");
        let ab = s.ratio(0, 1);
        let ba = s.ratio(1, 0);
        assert!((ab.ci_low * ba.ci_high - 1.0).abs() < 1e-12);
        assert!((ab.half_width_pct() - s.ratio(0, 2).half_width_pct()).abs() < 0.1);
        assert_eq!(s.degrees, 6);
    }

    #[test]
    fn too_few_rounds_or_broken_values_give_no_interval() {
        assert!(all_pairs(&[vec![1.0], vec![1.0]], None, 0.95).is_none());
        assert!(all_pairs(&[vec![1.0, 2.0]], None, 0.95).is_none());
        assert!(all_pairs(&[vec![1.0, f64::NAN], vec![1.0, 1.0]], None, 0.95).is_none());
        assert!(all_pairs(&[vec![1.0, 2.0], vec![1.0]], None, 0.95).is_none());
        assert!(all_pairs(&[vec![1.0, 2.0], vec![1.0, 2.0]], None, 1.0).is_none());
    }

    /// A/A in simulation: k copies of one runtime, instance and window noise per round; the
    /// statement "every pairwise interval holds 1" must hold in about 95% of experiments.
    #[test]
    fn the_whole_cell_statement_covers_at_the_stated_confidence() {
        let mut rng = fastrand::Rng::with_seed(11);
        let mut normal = || normal_quantile(rng.f64().clamp(1e-12, 1.0 - 1e-12));
        let experiments = 400;
        let mut covered = 0;
        for _ in 0..experiments {
            let round_effects: Vec<f64> = (0..5).map(|_| 0.05 * normal()).collect();
            let rows: Vec<Vec<f64>> = (0..7)
                .map(|_| {
                    round_effects
                        .iter()
                        .map(|b| 5.0 + b + 0.007 * normal())
                        .collect()
                })
                .collect();
            let s = all_pairs(&rows, None, 0.95).expect("an interval");
            let all_hold = (0..7).all(|i| {
                (0..7).all(|j| {
                    let iv = s.ratio(i, j);
                    iv.ci_low <= 1.0 && iv.ci_high >= 1.0
                })
            });
            covered += usize::from(all_hold);
        }
        let share = covered as f64 / experiments as f64;
        // 95% ± 3 standard errors of a 400-experiment share.
        assert!((0.917..=0.985).contains(&share), "{share}");
    }

    #[test]
    fn a_cost_of_the_first_place_in_balanced_rounds_is_removed_not_counted_as_noise() {
        // Three runtimes over six rounds rotated by one: whoever takes place 0 pays 6% more.
        let k = 3;
        let places: Vec<Vec<u32>> = (0..k)
            .map(|i| (0..6).map(|j| ((i + k - j % k) % k) as u32).collect())
            .collect();
        let rows: Vec<Vec<f64>> = (0..k)
            .map(|i| {
                (0..6)
                    .map(|j| {
                        let first = if places[i][j] == 0 { 0.06 } else { 0.0 };
                        5.0 + 0.01 * i as f64 + first + 0.001 * ((i * 7 + j * 3) % 5) as f64
                    })
                    .collect()
            })
            .collect();
        let with = all_pairs(&rows, Some(&places), 0.95).expect("an interval");
        let without = all_pairs(&rows, None, 0.95).expect("an interval");
        assert!(with.places_removed && !without.places_removed);
        assert_eq!(with.degrees, 8);
        assert!(
            with.half_width * 5.0 < without.half_width,
            "{with:?} {without:?}"
        );
        let iv = with.ratio(0, 2);
        assert!(
            iv.ci_low < 1.0202 && iv.ci_high > 1.0202 && iv.ci_low > 1.01,
            "{iv:?}"
        );
        // Rounds that are not a multiple of the runtimes leave places alone.
        let short: Vec<Vec<f64>> = rows.iter().map(|r| r[..4].to_vec()).collect();
        let short_places: Vec<Vec<u32>> = places.iter().map(|p| p[..4].to_vec()).collect();
        assert!(
            !all_pairs(&short, Some(&short_places), 0.95)
                .unwrap()
                .places_removed
        );
    }
}
