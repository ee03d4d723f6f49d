//! A share pooled over sub-windows, with the sub-window as the unit: the share of latencies at or
//! above an SLO's bound (a percentile SLO holds while it stays under 1 − the percentile), of
//! errors among requests, or any ratio of two sums.
//!
//! Why the sub-window and not the request: on a VM a pause of 10–130 ms delays every request that
//! arrives during it and the backlog it leaves, a contiguous batch that rises and falls together.
//! Requests in one batch are not independent observations, so a binomial interval over requests
//! (hundreds of thousands of them) would be far too narrow: the pseudo-replication the verdicts'
//! rounds avoid, one level down. Sub-windows of a second hold a pause and its drain whole, and
//! their totals scatter independently enough to be the unit.
//!
//! The estimator is the ratio of sums `Σy / Σn` (what the pooled histogram gives exactly); its
//! standard error is the cluster-robust one for a ratio (Cochran 1977, §6.4; the linearized
//! variance every survey package uses): `sqrt(m/(m−1) · Σ(yᵢ − p̂·nᵢ)²) / Σn` over m sub-windows,
//! and its bounds take Student's t with m − 1 degrees of freedom, so three sub-windows give wide
//! bounds and a decision waits for more. A share is bounded by 0 and 1 on the count scale; the
//! bounds are clamped to `[0, ∞)` only (a mean latency is a ratio too).

use crate::distribution::student_t_quantile;

/// A pooled share and its one-sided bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShareBounds {
    /// Σy ÷ Σn.
    pub share: f64,
    /// The lower bound, one-sided at the confidence asked for.
    pub low: f64,
    /// The upper bound, one-sided at the confidence asked for.
    pub high: f64,
    /// The sub-windows it rests on.
    pub windows: usize,
}

/// The share `Σy / Σn` of `parts` (one `(y, n)` per sub-window) with bounds that each hold at
/// `confidence` one-sided. None with fewer than two sub-windows that saw anything (`n > 0`), a
/// value that is not finite, or a confidence not strictly between 0 and 1.
pub fn pooled_share(parts: &[(f64, f64)], confidence: f64) -> Option<ShareBounds> {
    let seen: Vec<(f64, f64)> = parts.iter().copied().filter(|&(_, n)| n > 0.0).collect();
    let m = seen.len();
    if m < 2
        || !(confidence > 0.0 && confidence < 1.0)
        || seen.iter().any(|(y, n)| !y.is_finite() || !n.is_finite())
    {
        return None;
    }
    let total_y: f64 = seen.iter().map(|p| p.0).sum();
    let total_n: f64 = seen.iter().map(|p| p.1).sum();
    let share = total_y / total_n;
    let squares: f64 = seen.iter().map(|&(y, n)| (y - share * n).powi(2)).sum();
    let se = (m as f64 / (m as f64 - 1.0) * squares).sqrt() / total_n;
    let t = student_t_quantile(confidence, (m - 1) as f64);
    Some(ShareBounds {
        share,
        low: (share - t * se).max(0.0),
        high: share + t * se,
        windows: m,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_the_ratio_of_sums_and_equal_windows_have_no_width() {
        let b = pooled_share(&[(1.0, 100.0), (1.0, 100.0), (1.0, 100.0)], 0.95).unwrap();
        assert!((b.share - 0.01).abs() < 1e-12);
        assert!((b.high - b.low).abs() < 1e-12, "{b:?}");
        assert_eq!(b.windows, 3);
    }

    #[test]
    fn one_stalled_window_widens_the_bounds_and_more_windows_narrow_them() {
        // One second in four holds a stall that put 4% of its requests over the bound.
        let few = [(0.0, 1000.0), (40.0, 1000.0), (0.0, 1000.0), (0.0, 1000.0)];
        let b = pooled_share(&few, 0.95).unwrap();
        assert!((b.share - 0.01).abs() < 1e-12);
        assert!(b.low == 0.0 && b.high > 0.03, "{b:?}");
        let many: Vec<(f64, f64)> = few.iter().copied().cycle().take(16).collect();
        let b16 = pooled_share(&many, 0.95).unwrap();
        assert!((b16.share - 0.01).abs() < 1e-12);
        assert!(b16.high < b.high && b16.high < 0.02, "{b16:?}");
    }

    #[test]
    fn the_bounds_cover_a_known_share_at_about_their_confidence() {
        // Sub-windows whose share scatters around 2% (a clustered count): the upper bound sits
        // above 2% in about 95% of draws.
        let mut rng = fastrand::Rng::with_seed(11);
        let mut above = 0;
        let draws = 2000;
        for _ in 0..draws {
            let parts: Vec<(f64, f64)> = (0..8)
                .map(|_| {
                    let n = 1000.0;
                    let p = 0.02 * (0.5 + rng.f64());
                    (p * n, n)
                })
                .collect();
            if pooled_share(&parts, 0.95).unwrap().high >= 0.02 {
                above += 1;
            }
        }
        let covered = f64::from(above) / f64::from(draws);
        assert!((0.92..=0.98).contains(&covered), "{covered}");
    }

    #[test]
    fn too_few_windows_or_a_bad_confidence_give_nothing() {
        assert_eq!(pooled_share(&[(1.0, 10.0)], 0.95), None);
        assert_eq!(pooled_share(&[(1.0, 10.0), (0.0, 0.0)], 0.95), None);
        assert_eq!(pooled_share(&[(1.0, 10.0), (1.0, 10.0)], 1.0), None);
        assert_eq!(pooled_share(&[(f64::NAN, 10.0), (1.0, 10.0)], 0.95), None);
    }
}
