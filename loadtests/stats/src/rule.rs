//! The four-way rule (and the comparisons it never reached: not judged): an interval and an equivalence margin make a verdict — a win beyond the
//! margin, an order known but inside the margin ("ahead"), a tie within the margin, or not yet
//! known — and an estimate of how many samples would settle the last.
//!
//! The margin is symmetric on the ratio's log scale: a ratio r beyond `1 + margin` wins, and so
//! does one below `1 / (1 + margin)` for the other side, so flipping which runtime is `a` never
//! changes a verdict. A tie has to be shown, not assumed: the *whole* interval must lie inside the
//! margin.

use serde::{Deserialize, Serialize};

use crate::interval::Interval;

/// The outcome of the four-way rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The whole interval lies beyond the margin in the leader's favour.
    Win,
    /// The interval excludes 1 in the leader's favour but reaches inside the margin: the order is
    /// known, whether it matters is the margin's question.
    Ahead,
    /// The whole interval lies inside the margin: the two are the same within it.
    Equivalent,
    /// The interval crosses a margin boundary: more samples are needed to say.
    Undecided,
    /// No interval could be made or trusted (too few samples, a level not judged): the one outcome
    /// [`four_way`] never gives, for the comparisons that never reached it.
    NotJudged,
}

/// The four-way rule for `a` with equivalence margin `margin` (a fraction, 0.02 = 2%).
///
/// Win when ci_low > 1 + margin; Equivalent when the whole interval lies inside
/// [1/(1+margin), 1+margin] (even if it excludes 1: the difference is known not to matter);
/// Ahead when ci_low > 1 otherwise; Undecided otherwise — including when b is clearly better,
/// which only [`four_way_oriented`] reports.
pub fn four_way(interval: &Interval, margin: f64) -> Outcome {
    let upper = 1.0 + margin;
    let lower = 1.0 / upper;
    // Comparisons with NaN are false, so a broken interval falls through to Undecided.
    if interval.ci_low > upper {
        Outcome::Win
    } else if interval.ci_low >= lower && interval.ci_high <= upper {
        Outcome::Equivalent
    } else if interval.ci_low > 1.0 {
        Outcome::Ahead
    } else {
        Outcome::Undecided
    }
}

/// Like [`four_way`] but says who is ahead: (outcome, a_is_ahead), a_is_ahead being ratio >= 1; a
/// Win is the leader's, so a clear win for b is `(Outcome::Win, false)`.
pub fn four_way_oriented(interval: &Interval, margin: f64) -> (Outcome, bool) {
    let a_is_ahead = interval.ratio >= 1.0;
    let leader_view = if a_is_ahead {
        *interval
    } else {
        interval.flipped()
    };
    (four_way(&leader_view, margin), a_is_ahead)
}

/// The most samples [`samples_to_decide`] will suggest; beyond it a difference is not worth a run.
const MAX_SAMPLES_TO_DECIDE: f64 = 1_000_000.0;

/// For an Undecided interval, about how many samples in all would likely decide it.
///
/// It assumes the point estimate stays and each end's distance from it (on the log scale, so an
/// asymmetric interval keeps its shape) shrinks as 1/sqrt(n), and finds the first n at which the
/// interval is decided either way: its lower end past 1 (Ahead, or a Win beyond the margin), or
/// both ends inside the margin (Equivalent), whichever comes first. None for a decided interval
/// (a Win or Ahead for either side, or Equivalent), an estimate of exactly 1 with a margin of 0,
/// or an answer above 1_000_000.
pub fn samples_to_decide(interval: &Interval, margin: f64) -> Option<usize> {
    let (outcome, a_is_ahead) = four_way_oriented(interval, margin);
    if outcome != Outcome::Undecided || interval.samples == 0 {
        return None;
    }
    let view = if a_is_ahead {
        *interval
    } else {
        interval.flipped()
    };
    let (estimate, margin_log) = (view.ratio.ln(), (1.0 + margin).ln());
    let below = estimate - view.ci_low.ln();
    let above = view.ci_high.ln() - estimate;
    let current = view.samples as f64;
    // The factor s = sqrt(current / n) by which both distances would have shrunk at n samples;
    // a room of zero or less is never reached.
    let fits = |room: f64, distance: f64| {
        if room <= 0.0 {
            0.0
        } else if distance > 0.0 {
            room / distance
        } else {
            f64::INFINITY
        }
    };
    // Ahead needs below · s < estimate, strictly: the smallest n past the bound.
    let ahead = fits(estimate, below);
    let ahead_n = (current / (ahead * ahead)).floor() + 1.0;
    // Equivalence needs both ends inside, inclusively; an end on the estimate side never binds.
    let equivalent = fits(estimate + margin_log, below).min(fits(margin_log - estimate, above));
    let equivalent_n = (current / (equivalent * equivalent)).ceil();
    let needed = ahead_n.min(equivalent_n);
    if !needed.is_finite() || needed > MAX_SAMPLES_TO_DECIDE {
        return None;
    }
    // Undecided means the answer exceeds today's count; max() guards float rounding at the edge.
    Some((needed as usize).max(view.samples + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(ratio: f64, ci_low: f64, ci_high: f64, samples: usize) -> Interval {
        Interval {
            ratio,
            ci_low,
            ci_high,
            samples,
            confidence: 0.95,
        }
    }

    /// The interval `samples_to_decide` imagines at `n` samples.
    fn projected(current: &Interval, n: usize) -> Interval {
        let shrink = (current.samples as f64 / n as f64).sqrt();
        let centre = current.ratio.ln();
        interval(
            current.ratio,
            (centre - (centre - current.ci_low.ln()) * shrink).exp(),
            (centre + (current.ci_high.ln() - centre) * shrink).exp(),
            n,
        )
    }

    #[test]
    fn four_way_reads_an_interval_against_the_margin() {
        let cases = [
            ((1.05, 1.03, 1.07), Outcome::Win),
            ((1.0, 0.99, 1.01), Outcome::Equivalent),
            ((1.03, 1.01, 1.05), Outcome::Ahead),
            ((1.015, 1.005, 1.025), Outcome::Ahead),
            ((1.005, 1.001, 1.015), Outcome::Equivalent),
            ((1.01, 0.995, 1.025), Outcome::Undecided),
            ((f64::NAN, f64::NAN, f64::NAN), Outcome::Undecided),
        ];
        for ((ratio, low, high), outcome) in cases {
            assert_eq!(
                four_way(&interval(ratio, low, high, 30), 0.02),
                outcome,
                "{ratio} ({low}–{high})"
            );
        }
    }

    #[test]
    fn four_way_leaves_a_clear_win_for_b_undecided() {
        assert_eq!(
            four_way(&interval(0.9, 0.88, 0.92, 30), 0.02),
            Outcome::Undecided
        );
    }

    #[test]
    fn half_width_is_a_percentage_of_the_ratio() {
        let half = interval(1.25, 1.0, 1.5, 10).half_width_pct();
        assert!((half - 20.0).abs() < 1e-12);
    }

    #[test]
    fn flipping_inverts_the_ratio_and_swaps_the_ends() {
        let original = interval(0.8, 0.5, 1.0, 12);
        let flipped = original.flipped();
        assert_eq!(
            (flipped.ratio, flipped.ci_low, flipped.ci_high),
            (1.25, 1.0, 2.0)
        );
        assert_eq!(flipped.samples, 12);
        assert_eq!(flipped.flipped(), original);
    }

    #[test]
    fn four_way_oriented_says_b_is_ahead_and_still_calls_its_win() {
        let b_better = interval(0.9, 0.88, 0.92, 30);
        assert_eq!(four_way_oriented(&b_better, 0.02), (Outcome::Win, false));
        assert_eq!(
            four_way_oriented(&b_better.flipped(), 0.02),
            (Outcome::Win, true)
        );
        let b_slightly_ahead = interval(0.995, 0.99, 1.0, 30);
        assert_eq!(
            four_way_oriented(&b_slightly_ahead, 0.02),
            (Outcome::Equivalent, false)
        );
    }

    #[test]
    fn an_interval_straddling_the_margin_would_be_decided_by_more_samples() {
        let straddling = interval(1.03, 0.995, 1.065, 30);
        assert_eq!(four_way(&straddling, 0.02), Outcome::Undecided);
        let n = samples_to_decide(&straddling, 0.02).unwrap();
        assert!(n > straddling.samples, "{n}");
        // It is the smallest such count: the imagined interval at n decides (the order is known
        // before a win beyond the margin is), at n − 1 it does not.
        assert_eq!(four_way(&projected(&straddling, n), 0.02), Outcome::Ahead);
        assert_eq!(
            four_way(&projected(&straddling, n - 1), 0.02),
            Outcome::Undecided
        );
    }

    #[test]
    fn a_wide_interval_around_one_would_be_decided_as_equivalent() {
        let wide = interval(1.005, 0.97, 1.04, 20);
        let n = samples_to_decide(&wide, 0.02).unwrap();
        assert!(n > wide.samples, "{n}");
        assert_eq!(four_way(&projected(&wide, n), 0.02), Outcome::Equivalent);
        assert_eq!(four_way(&projected(&wide, n - 1), 0.02), Outcome::Undecided);
    }

    #[test]
    fn an_undecided_lead_for_b_is_projected_as_well() {
        let b_straddling = interval(1.03, 0.99, 1.07, 30).flipped();
        assert_eq!(
            samples_to_decide(&b_straddling, 0.02),
            samples_to_decide(&b_straddling.flipped(), 0.02)
        );
        assert!(samples_to_decide(&b_straddling, 0.02).is_some());
    }

    #[test]
    fn a_decided_interval_needs_no_more_samples() {
        assert_eq!(
            samples_to_decide(&interval(1.05, 1.03, 1.07, 30), 0.02),
            None
        );
        assert_eq!(
            samples_to_decide(&interval(1.0, 0.99, 1.01, 30), 0.02),
            None
        );
        assert_eq!(
            samples_to_decide(&interval(0.9, 0.88, 0.92, 30), 0.02),
            None
        );
    }

    #[test]
    fn an_estimate_on_a_margin_boundary_is_decided_as_an_order() {
        // On the boundary a win can never be shown, but the order can.
        let on_boundary = interval(1.02, 0.99, 1.05, 30);
        let n = samples_to_decide(&on_boundary, 0.02).unwrap();
        assert_eq!(four_way(&projected(&on_boundary, n), 0.02), Outcome::Ahead);
    }

    #[test]
    fn a_decision_beyond_a_million_samples_is_not_suggested() {
        assert_eq!(
            samples_to_decide(&interval(1.0001, 0.1, 10.0, 300), 0.02),
            None
        );
    }
}
