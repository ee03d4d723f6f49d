//! Plain summaries for reports: mean, median and sample standard deviation.
//!
//! They take the values as given — no filtering — and answer `NaN` where the summary is undefined
//! (an empty slice, or one value for a standard deviation) rather than a `0.0` that a report would
//! print as if it had been measured.

/// The arithmetic mean; `NaN` for an empty slice.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The median (the mean of the two middle values for an even count); `NaN` for an empty slice.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    }
}

/// The sample standard deviation (divides by n − 1); `NaN` for fewer than two values.
pub fn std_dev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let centre = mean(values);
    let squares: f64 = values.iter().map(|v| (v - centre) * (v - centre)).sum();
    (squares / (values.len() - 1) as f64).sqrt()
}

/// The geometric mean of positive `values` with its two-sided interval at `confidence`
/// (Student's t on the logs, n − 1 degrees of freedom): `(centre, low, high)`. None for fewer than
/// two values, a value not positive and finite, or a confidence not strictly between 0 and 1.
pub fn geometric_interval(values: &[f64], confidence: f64) -> Option<(f64, f64, f64)> {
    if values.len() < 2
        || !(confidence > 0.0 && confidence < 1.0)
        || values.iter().any(|v| !(v.is_finite() && *v > 0.0))
    {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let centre = mean(&logs);
    let t = crate::distribution::student_t_quantile(
        1.0 - (1.0 - confidence) / 2.0,
        (values.len() - 1) as f64,
    );
    let half = t * std_dev(&logs) / (values.len() as f64).sqrt();
    Some((centre.exp(), (centre - half).exp(), (centre + half).exp()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_geometric_interval_centres_on_the_geometric_mean_and_widens_with_scatter() {
        let (c, l, h) = geometric_interval(&[100.0, 400.0], 0.95).unwrap();
        assert!((c - 200.0).abs() < 1e-9);
        // t(0.975, 1) = 12.706: the interval is very wide with two values.
        assert!(l < 1.0 && h > 40_000.0, "{l} {h}");
        let (c, l, h) = geometric_interval(&[100.0, 100.0, 100.0], 0.95).unwrap();
        assert!((c - 100.0).abs() < 1e-9 && (l - 100.0).abs() < 1e-9 && (h - 100.0).abs() < 1e-9);
        assert_eq!(geometric_interval(&[100.0], 0.95), None);
        assert_eq!(geometric_interval(&[100.0, 0.0], 0.95), None);
    }

    #[test]
    fn mean_median_and_std_dev_match_hand_computed_values() {
        let values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&values), 5.0);
        assert_eq!(median(&values), 4.5);
        // Sum of squared deviations is 32; the sample variance divides by 7.
        assert!((std_dev(&values) - (32.0_f64 / 7.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn median_of_an_odd_count_is_the_middle_value_whatever_the_order() {
        assert_eq!(median(&[9.0, 1.0, 5.0]), 5.0);
    }

    #[test]
    fn undefined_summaries_are_nan_not_zero() {
        assert!(mean(&[]).is_nan());
        assert!(median(&[]).is_nan());
        assert!(std_dev(&[3.0]).is_nan());
    }
}
