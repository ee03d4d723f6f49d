//! Synthetic windows for the tests: a seeded noise source and paired runs with a known true ratio,
//! so every test is reproducible and none depends on timing.

/// A seeded source of the noise the tests feed the statistics.
pub(crate) struct Noise(fastrand::Rng);

impl Noise {
    /// A noise source that replays the same draws for the same seed.
    pub(crate) fn seeded(seed: u64) -> Self {
        Self(fastrand::Rng::with_seed(seed))
    }

    /// A standard normal draw (Box–Muller).
    pub(crate) fn gaussian(&mut self) -> f64 {
        // 1 − u lies in (0, 1], so the logarithm is finite.
        let radius = (-2.0 * (1.0 - self.0.f64()).ln()).sqrt();
        radius * (std::f64::consts::TAU * self.0.f64()).cos()
    }

    /// A uniform draw from `low..high`.
    pub(crate) fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.0.f64()
    }

    /// `n` steps of a stationary AR(1) series with autocorrelation `phi` and marginal spread `sd`.
    pub(crate) fn ar1(&mut self, n: usize, phi: f64, sd: f64) -> Vec<f64> {
        // Starting from the stationary distribution keeps the first windows as noisy as the rest.
        let innovation = sd * (1.0 - phi * phi).sqrt();
        let mut level = sd * self.gaussian();
        (0..n)
            .map(|_| {
                let current = level;
                level = phi * level + innovation * self.gaussian();
                current
            })
            .collect()
    }
}

/// Paired costs over `n` windows where b truly costs `true_ratio` times a.
///
/// Each window multiplies both sides by one shared factor from 0.8..1.2 (the machine noise the
/// pairing must cancel), and each side by its own log-normal noise of spread `sd`, AR(1)-correlated
/// across windows with `phi` (0 for independent windows).
pub(crate) fn paired_costs(
    noise: &mut Noise,
    n: usize,
    true_ratio: f64,
    sd: f64,
    phi: f64,
) -> (Vec<f64>, Vec<f64>) {
    let own_a = noise.ar1(n, phi, sd);
    let own_b = noise.ar1(n, phi, sd);
    let mut a = Vec::with_capacity(n);
    let mut b = Vec::with_capacity(n);
    for (noise_a, noise_b) in own_a.iter().zip(&own_b) {
        let shared = noise.uniform(0.8, 1.2);
        a.push(100.0 * shared * noise_a.exp());
        b.push(100.0 * true_ratio * shared * noise_b.exp());
    }
    (a, b)
}
