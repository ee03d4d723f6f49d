//! Ratios between two runtimes with their confidence intervals: paired per-window costs (the
//! verdict's main figure) and unpaired rates from separate runs.
//!
//! A ratio above 1 always means `a` is better, whether the inputs are costs (lower is better, so
//! the ratio is b/a) or rates (higher is better, so it is a/b); the four-way rule can then read
//! every interval the same way.

use serde::{Deserialize, Serialize};

use crate::bootstrap::{mean_deviations, percentile};
use crate::summary::mean;

/// A ratio between two runtimes with its confidence interval; > 1 means `a` is better.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The point estimate.
    pub ratio: f64,
    /// The interval's lower end.
    pub ci_low: f64,
    /// The interval's upper end.
    pub ci_high: f64,
    /// How many usable samples it rests on: pairs if paired, both sides' values if unpaired.
    pub samples: usize,
    /// The interval's confidence level, e.g. 0.95.
    pub confidence: f64,
}

impl Interval {
    /// Half the interval's width, percent of the ratio: ((ci_high - ci_low) / 2 / ratio * 100).
    pub fn half_width_pct(&self) -> f64 {
        (self.ci_high - self.ci_low) / 2.0 / self.ratio * 100.0
    }

    /// Flip an interval so that b becomes a (ratio, ci_low, ci_high inverted and swapped).
    pub fn flipped(&self) -> Interval {
        Interval {
            ratio: 1.0 / self.ratio,
            ci_low: 1.0 / self.ci_high,
            ci_high: 1.0 / self.ci_low,
            ..*self
        }
    }
}

/// The geometric-mean ratio of paired costs, b over a, with its interval; > 1 means `a` is cheaper.
///
/// `a_cost[i]` and `b_cost[i]` are measured in the same window i (lower is better, e.g. CPU µs per
/// request). The ratio is the geometric mean of `b_cost[i] / a_cost[i]` (exp of the mean
/// log-ratio): noise common to both sides of a window, and drift common to the whole run, cancel in
/// each log-ratio before anything is averaged. The interval is the prewhitened, small-sample
/// calibrated moving-block bootstrap of `bootstrap.rs` (4000 resamples, drawn from `seed`) applied
/// to the mean log-ratio. Windows where either cost is not finite or <= 0 are dropped (pairs past
/// the shorter slice are ignored). None when fewer than 3 usable pairs remain, or when `confidence`
/// is not strictly between 0 and 1.
pub fn paired_cost_ratio(
    a_cost: &[f64],
    b_cost: &[f64],
    confidence: f64,
    seed: u64,
) -> Option<Interval> {
    if !valid_confidence(confidence) {
        return None;
    }
    let usable = |cost: f64| cost.is_finite() && cost > 0.0;
    let log_ratios: Vec<f64> = a_cost
        .iter()
        .zip(b_cost)
        .filter(|(a, b)| usable(**a) && usable(**b))
        .map(|(a, b)| (b / a).ln())
        .collect();
    if log_ratios.len() < 3 {
        return None;
    }
    let centre = mean(&log_ratios);
    let mut rng = fastrand::Rng::with_seed(seed);
    let deviations = mean_deviations(&log_ratios, confidence, &mut rng);
    let tail = (1.0 - confidence) / 2.0;
    Some(Interval {
        ratio: centre.exp(),
        ci_low: (centre + percentile(&deviations, tail)).exp(),
        ci_high: (centre + percentile(&deviations, 1.0 - tail)).exp(),
        samples: log_ratios.len(),
        confidence,
    })
}

/// The ratio of two unpaired rates, mean(a) / mean(b), with its interval; > 1 means `a` is faster.
///
/// For samples of a rate where higher is better (e.g. hits/s per second of separate runs). Each
/// side is bootstrapped independently with the same block scheme as [`paired_cost_ratio`] (one
/// `seed` for both, a first), and each draw's relative deviations combine on the log scale —
/// ln(ratio*) ≈ ln(ratio) + δa/mean(a) − δb/mean(b) — so the interval stays positive even when a
/// small-sample widening is large. Values that are not finite or are negative are dropped. None
/// when either side has fewer than 2 usable values, mean(b) == 0, or `confidence` is not strictly
/// between 0 and 1. A side of all zeros in `a` gives ratio 0 with a zero-width interval.
pub fn unpaired_rate_ratio(a: &[f64], b: &[f64], confidence: f64, seed: u64) -> Option<Interval> {
    if !valid_confidence(confidence) {
        return None;
    }
    let usable = |values: &[f64]| -> Vec<f64> {
        values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .collect()
    };
    let (a, b) = (usable(a), usable(b));
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (mean_a, mean_b) = (mean(&a), mean(&b));
    if mean_b == 0.0 {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let relative = |values: &[f64], centre: f64, rng: &mut fastrand::Rng| -> Vec<f64> {
        let deviations = mean_deviations(values, confidence, rng);
        // An all-zero side has no spread; dividing its zero deviations by a zero mean would be NaN.
        if centre > 0.0 {
            deviations.iter().map(|d| d / centre).collect()
        } else {
            vec![0.0; deviations.len()]
        }
    };
    let relative_a = relative(&a, mean_a, &mut rng);
    let mut relative_b = relative(&b, mean_b, &mut rng);
    // The two sides are independent draws, so pairing them index by index is one joint draw —
    // once one side is shuffled: each comes back sorted, and sorted against sorted would pair the
    // two sides' lows and highs, cancelling their spreads instead of adding them.
    rng.shuffle(&mut relative_b);
    let mut log_deviations: Vec<f64> = relative_a
        .iter()
        .zip(&relative_b)
        .map(|(da, db)| da - db)
        .collect();
    log_deviations.sort_by(f64::total_cmp);
    let ratio = mean_a / mean_b;
    let tail = (1.0 - confidence) / 2.0;
    Some(Interval {
        ratio,
        ci_low: ratio * percentile(&log_deviations, tail).exp(),
        ci_high: ratio * percentile(&log_deviations, 1.0 - tail).exp(),
        samples: a.len() + b.len(),
        confidence,
    })
}

/// Whether `confidence` is a level an interval can have (strictly between 0 and 1).
fn valid_confidence(confidence: f64) -> bool {
    confidence > 0.0 && confidence < 1.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::{four_way, Outcome};
    use crate::synthetic::{paired_costs, Noise};

    fn contains(interval: &Interval, value: f64) -> bool {
        interval.ci_low <= value && value <= interval.ci_high
    }

    #[test]
    fn a_five_percent_cost_gap_under_shared_noise_is_measured_and_called_a_win() {
        let mut noise = Noise::seeded(1);
        let (a, b) = paired_costs(&mut noise, 60, 1.05, 0.01, 0.0);
        let interval = paired_cost_ratio(&a, &b, 0.95, 7).unwrap();
        assert!((interval.ratio / 1.05 - 1.0).abs() < 0.005, "{interval:?}");
        assert!(contains(&interval, 1.05), "{interval:?}");
        assert!(!contains(&interval, 1.0), "{interval:?}");
        assert_eq!(four_way(&interval, 0.02), Outcome::Win);
    }

    #[test]
    fn an_a_a_run_contains_one_and_is_equivalent_within_two_percent() {
        let mut noise = Noise::seeded(2);
        let (a, b) = paired_costs(&mut noise, 30, 1.0, 0.01, 0.0);
        let interval = paired_cost_ratio(&a, &b, 0.95, 7).unwrap();
        assert!(contains(&interval, 1.0), "{interval:?}");
        assert_eq!(four_way(&interval, 0.02), Outcome::Equivalent);
    }

    /// How often a 95% interval over A/A runs of `windows` windows with AR(1) noise contains 1.
    fn a_a_coverage(seed: u64, experiments: u64, windows: usize, phi: f64) -> f64 {
        let mut noise = Noise::seeded(seed);
        let covered = (0..experiments)
            .filter(|experiment| {
                let (a, b) = paired_costs(&mut noise, windows, 1.0, 0.01, phi);
                contains(&paired_cost_ratio(&a, &b, 0.95, *experiment).unwrap(), 1.0)
            })
            .count();
        covered as f64 / experiments as f64
    }

    #[test]
    fn the_interval_stays_roughly_honest_when_neighbouring_windows_correlate() {
        let coverage = a_a_coverage(3, 200, 20, 0.5);
        assert!(coverage >= 0.88, "coverage {coverage}");
    }

    #[test]
    fn the_interval_is_not_made_honest_by_being_uselessly_wide() {
        // With independent windows a 95% interval that covered nearly always would be wasting runs.
        let coverage = a_a_coverage(4, 200, 20, 0.0);
        assert!((0.88..=0.99).contains(&coverage), "coverage {coverage}");
    }

    #[test]
    fn drift_common_to_both_sides_does_not_move_the_paired_ratio() {
        let mut noise = Noise::seeded(5);
        let (a, b) = paired_costs(&mut noise, 40, 1.03, 0.01, 0.0);
        let trend = |i: usize| 1.0 + 0.5 * i as f64 / 39.0;
        let drifting_a: Vec<f64> = a.iter().enumerate().map(|(i, v)| v * trend(i)).collect();
        let drifting_b: Vec<f64> = b.iter().enumerate().map(|(i, v)| v * trend(i)).collect();
        let steady = paired_cost_ratio(&a, &b, 0.95, 11).unwrap();
        let drifting = paired_cost_ratio(&drifting_a, &drifting_b, 0.95, 11).unwrap();
        assert!((steady.ratio - drifting.ratio).abs() < 1e-9);
        assert!((steady.ci_low - drifting.ci_low).abs() < 1e-6);
        assert!((steady.ci_high - drifting.ci_high).abs() < 1e-6);
    }

    #[test]
    fn the_same_windows_and_seed_give_the_same_interval() {
        let mut noise = Noise::seeded(6);
        let (a, b) = paired_costs(&mut noise, 25, 1.02, 0.02, 0.3);
        assert_eq!(
            paired_cost_ratio(&a, &b, 0.95, 42),
            paired_cost_ratio(&a, &b, 0.95, 42)
        );
    }

    #[test]
    fn fewer_than_three_pairs_give_no_interval() {
        assert_eq!(paired_cost_ratio(&[1.0, 2.0], &[1.0, 2.0], 0.95, 1), None);
        assert_eq!(paired_cost_ratio(&[], &[], 0.95, 1), None);
    }

    #[test]
    fn non_finite_and_non_positive_costs_are_dropped_with_their_pair() {
        let a = [10.0, 10.0, f64::NAN, 10.0, 0.0, 10.0, 10.0];
        let b = [11.0, 11.0, 11.0, f64::INFINITY, 11.0, -1.0, 11.0];
        let interval = paired_cost_ratio(&a, &b, 0.95, 1).unwrap();
        assert_eq!(interval.samples, 3);
        assert!((interval.ratio - 1.1).abs() < 1e-12);

        let mostly_broken = [10.0, f64::NAN, 0.0, 10.0];
        assert_eq!(paired_cost_ratio(&mostly_broken, &[11.0; 4], 0.95, 1), None);
    }

    #[test]
    fn a_confidence_outside_zero_and_one_gives_no_interval() {
        let costs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(paired_cost_ratio(&costs, &costs, 1.0, 1), None);
        assert_eq!(unpaired_rate_ratio(&costs, &costs, 0.0, 1), None);
    }

    #[test]
    fn unpaired_rates_with_means_100_and_90_give_a_ratio_of_one_point_one_one_one() {
        let mut noise = Noise::seeded(8);
        let a: Vec<f64> = (0..30).map(|_| 100.0 + 3.0 * noise.gaussian()).collect();
        let b: Vec<f64> = (0..30).map(|_| 90.0 + 3.0 * noise.gaussian()).collect();
        let interval = unpaired_rate_ratio(&a, &b, 0.95, 3).unwrap();
        assert!((interval.ratio - mean(&a) / mean(&b)).abs() < 1e-12);
        assert!((interval.ratio - 100.0 / 90.0).abs() < 0.02, "{interval:?}");
        assert!(contains(&interval, interval.ratio), "{interval:?}");
        assert!(interval.ci_low > 1.0, "{interval:?}");
        assert_eq!(interval.samples, 60);
    }

    #[test]
    fn an_unpaired_a_a_interval_contains_its_ratio_and_has_the_width_of_two_independent_sides() {
        // Two sides of 30 rates around 100 with 3% noise: the log-ratio's standard error is
        // about sqrt(2 · 0.03² / 30) = 0.77%, so a 95% interval spans about ±1.5%, not ±0.1%.
        let mut noise = Noise::seeded(8);
        let _skipped: Vec<f64> = (0..60).map(|_| noise.gaussian()).collect();
        let a: Vec<f64> = (0..30).map(|_| 100.0 + 3.0 * noise.gaussian()).collect();
        let b: Vec<f64> = (0..30).map(|_| 100.0 + 3.0 * noise.gaussian()).collect();
        let interval = unpaired_rate_ratio(&a, &b, 0.95, 3).unwrap();
        assert!(contains(&interval, interval.ratio), "{interval:?}");
        assert!(interval.half_width_pct() > 1.0, "{interval:?}");
    }

    #[test]
    fn unpaired_rates_need_two_usable_values_a_side_and_a_nonzero_b() {
        assert_eq!(unpaired_rate_ratio(&[1.0], &[1.0, 2.0], 0.95, 1), None);
        assert_eq!(
            unpaired_rate_ratio(&[1.0, 2.0], &[1.0, f64::NAN, -3.0], 0.95, 1),
            None
        );
        assert_eq!(unpaired_rate_ratio(&[1.0, 2.0], &[0.0, 0.0], 0.95, 1), None);
        let zero_a = unpaired_rate_ratio(&[0.0, 0.0], &[1.0, 2.0], 0.95, 1).unwrap();
        assert_eq!(
            (zero_a.ratio, zero_a.ci_low, zero_a.ci_high),
            (0.0, 0.0, 0.0)
        );
    }
}
