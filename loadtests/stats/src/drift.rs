//! How far a comparison moved against earlier runs of the same comparison set (`compare
//! --baseline`), judged as a regression gate for CI judges it: many comparisons at once, each
//! against runs made at another time.
//!
//! Two things make a naive gate cry wolf, and each has its answer here:
//! - **Runs differ by more than one run's interval says.** A run's interval covers what moves
//!   inside it (windows, rounds of fresh servers), not what is shared by all of its rounds: the
//!   machine's state that quarter of an hour, the rate its probes chose (docs/results.md has how
//!   far `--quick` runs of one binary scattered beyond their intervals). With **two or more
//!   earlier runs**, that scatter is measured ([`Scatter`], pooled per pair of runtimes over the cells) and the change's interval
//!   is a **prediction interval** (Student's t): how far a new run of the same set lands from the
//!   earlier runs' mean when nothing changed. With one earlier run the scatter cannot be measured,
//!   and the two runs' intervals are combined as they are ([`widened`]).
//! - **A gate asks many questions at once.** One run against its baseline judges every cell's
//!   comparisons (35 in a `--quick` run), and one false alarm fails the job. Each comparison is
//!   therefore judged at the confidence that holds for them all ([`per_member`], Bonferroni), so
//!   "no regression" is the answer for an unchanged set in at least the rule's confidence of runs.

use crate::distribution::{normal_quantile, student_t_quantile};

/// The run-to-run scatter of one pair's log ratio, pooled over the cells measured in two or more
/// earlier runs: the sum of squared deviations from each cell's mean and their degrees of freedom.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scatter {
    sum_of_squares: f64,
    degrees: usize,
}

impl Scatter {
    /// Adds one cell: its log ratio in each earlier run (a single run adds nothing).
    pub fn add(&mut self, logs: &[f64]) {
        if logs.len() < 2 {
            return;
        }
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        self.sum_of_squares += logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
        self.degrees += logs.len() - 1;
    }

    /// The pooled standard deviation of one run's log ratio, if any cell had two runs.
    pub fn sd(&self) -> Option<f64> {
        (self.degrees > 0).then(|| (self.sum_of_squares / self.degrees as f64).sqrt())
    }

    /// The degrees of freedom behind [`Scatter::sd`].
    pub fn degrees(&self) -> usize {
        self.degrees
    }
}

/// The confidence each of `family` comparisons needs for `confidence` to hold over them all at
/// once (Bonferroni: no assumption about how the comparisons correlate).
pub fn per_member(confidence: f64, family: usize) -> f64 {
    1.0 - (1.0 - confidence) / family.max(1) as f64
}

/// The change of a log ratio from the mean of its earlier runs `before` to `now`, and the
/// half-width of its two-sided `confidence` prediction interval from the pair's `scatter`:
/// `t · sd · √(1 + 1/k)` for k earlier runs (the new run scatters as one earlier run does, and the
/// earlier runs' mean as k of them do). None without earlier runs or a measured scatter.
pub fn predicted_change(
    now: f64,
    before: &[f64],
    scatter: &Scatter,
    confidence: f64,
) -> Option<(f64, f64)> {
    let sd = scatter.sd()?;
    if before.is_empty() {
        return None;
    }
    let k = before.len() as f64;
    let mean = before.iter().sum::<f64>() / k;
    let t = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, scatter.degrees as f64);
    Some((now - mean, t * sd * (1.0 + 1.0 / k).sqrt()))
}

/// A two-sided interval's half-width at `confidence`, widened to `member` confidence (the normal
/// quantiles' ratio; for an interval that was simultaneous already this widens more than needed,
/// on the safe side).
pub fn widened(half: f64, confidence: f64, member: f64) -> f64 {
    let z = |c: f64| normal_quantile(1.0 - (1.0 - c) / 2.0);
    half * z(member) / z(confidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scatter_pools_cells_and_ignores_a_cell_of_one_run() {
        let mut s = Scatter::default();
        assert_eq!(s.sd(), None);
        s.add(&[0.10]);
        assert_eq!(s.sd(), None, "one run says nothing about runs");
        s.add(&[0.10, 0.12]);
        s.add(&[0.30, 0.28, 0.32]);
        assert_eq!(s.degrees(), 3);
        // Squares: 2 × 0.01² and 2 × 0.02², over 3 degrees.
        let expected = ((2.0 * 0.0001 + 2.0 * 0.0004) / 3.0_f64).sqrt();
        assert!((s.sd().unwrap() - expected).abs() < 1e-12);
    }

    #[test]
    fn a_prediction_interval_is_wider_than_the_scatter_and_narrows_with_runs() {
        let mut s = Scatter::default();
        for cell in 0..10 {
            let c = cell as f64 * 0.01;
            s.add(&[c - 0.01, c + 0.01]);
        }
        let (centre, two) = predicted_change(0.05, &[0.0, 0.02], &s, 0.95).unwrap();
        assert!((centre - 0.04).abs() < 1e-12);
        let sd = s.sd().unwrap();
        assert!(
            two > 1.96 * sd * 1.2,
            "t with 10 degrees and √1.5: {two} vs sd {sd}"
        );
        let (_, five) = predicted_change(0.05, &[0.0; 5], &s, 0.95).unwrap();
        assert!(
            five < two,
            "more earlier runs, a surer mean: {five} vs {two}"
        );
        assert_eq!(predicted_change(0.0, &[], &s, 0.95), None);
        assert_eq!(
            predicted_change(0.0, &[0.0], &Scatter::default(), 0.95),
            None
        );
    }

    #[test]
    fn many_comparisons_each_need_more_confidence_and_a_wider_interval() {
        assert!((per_member(0.95, 1) - 0.95).abs() < 1e-12);
        assert!((per_member(0.95, 35) - (1.0 - 0.05 / 35.0)).abs() < 1e-12);
        assert!((widened(1.0, 0.95, 0.95) - 1.0).abs() < 1e-9);
        // z at 1 − 0.05/70 is about 3.19 against 1.96.
        let w = widened(1.0, 0.95, per_member(0.95, 35));
        assert!((w - 3.19 / 1.96).abs() < 0.01, "{w}");
    }
}
