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

#[cfg(test)]
mod tests {
    use super::*;

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
