//! The two quantile functions the bootstrap's small-sample widening needs: the standard normal's
//! and Student's t's (any real degrees of freedom).
//!
//! They are written out here rather than taken from a statistics crate because the crate keeps to
//! two dependencies, and these are short, textbook and checked against published tables below.

/// The standard normal quantile for `p` in (0, 1) (Acklam's rational approximation, relative error
/// below 1.2e-9, which is far finer than a 4000-resample bootstrap can resolve).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const P_LOW: f64 = 0.024_25;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < P_LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - P_LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Student's t quantile for `p` in [0.5, 1) and `df` > 0 degrees of freedom.
///
/// Found by bisection on the upper tail, which is exact up to the incomplete beta's precision and
/// needs no special case for small or fractional `df` (a block count is rarely a whole number).
pub(crate) fn student_t_quantile(p: f64, df: f64) -> f64 {
    let target = 1.0 - p;
    let (mut low, mut high) = (0.0_f64, 1.0_f64);
    while student_t_upper_tail(high, df) > target {
        high *= 2.0;
        if !high.is_finite() {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let middle = 0.5 * (low + high);
        if student_t_upper_tail(middle, df) > target {
            low = middle;
        } else {
            high = middle;
        }
    }
    0.5 * (low + high)
}

/// P(T > t) for t >= 0: half the regularised incomplete beta I_{df/(df+t²)}(df/2, 1/2).
fn student_t_upper_tail(t: f64, df: f64) -> f64 {
    0.5 * regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// I_x(a, b) by Lentz's continued fraction, using the symmetry I_x(a,b) = 1 − I_{1−x}(b,a) where
/// the fraction converges slowly.
fn regularized_incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut result = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        result *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        result *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    result
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    use std::f64::consts::PI;
    if x < 0.5 {
        // Reflection: the series below is accurate only for x >= 0.5.
        return (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let series = G
        .iter()
        .enumerate()
        .skip(1)
        .fold(G[0], |sum, (i, g)| sum + g / (x + i as f64));
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + series.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: f64, expected: f64, tolerance: f64) -> bool {
        (actual - expected).abs() <= tolerance
    }

    #[test]
    fn normal_quantiles_match_the_published_table() {
        assert!(close(normal_quantile(0.5), 0.0, 1e-12));
        assert!(close(normal_quantile(0.95), 1.644_853_6, 1e-6));
        assert!(close(normal_quantile(0.975), 1.959_964_0, 1e-6));
        assert!(close(normal_quantile(0.995), 2.575_829_3, 1e-6));
        assert!(close(normal_quantile(0.005), -2.575_829_3, 1e-6));
    }

    #[test]
    fn student_t_quantiles_match_the_published_table() {
        assert!(close(student_t_quantile(0.975, 1.0), 12.706_2, 1e-3));
        assert!(close(student_t_quantile(0.975, 2.0), 4.302_7, 1e-3));
        assert!(close(student_t_quantile(0.975, 5.0), 2.570_6, 1e-3));
        assert!(close(student_t_quantile(0.975, 30.0), 2.042_3, 1e-3));
        assert!(close(student_t_quantile(0.95, 10.0), 1.812_5, 1e-3));
    }

    #[test]
    fn student_t_tends_to_the_normal_as_degrees_of_freedom_grow() {
        assert!(close(student_t_quantile(0.975, 1e5), 1.959_964, 1e-3));
    }

    #[test]
    fn student_t_quantiles_are_ordered_between_whole_degrees_of_freedom() {
        let (five, five_and_half, six) = (
            student_t_quantile(0.975, 5.0),
            student_t_quantile(0.975, 5.5),
            student_t_quantile(0.975, 6.0),
        );
        assert!(five > five_and_half && five_and_half > six);
    }
}
