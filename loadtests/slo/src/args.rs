//! The search's flags ([`SloArgs`]), shared by `brigade load` and `brigade compare`, and the SLOs
//! and settings they describe.

use brigade_load::threshold::Threshold;

use crate::settings::{
    SearchSettings, DEFAULT_MAX_WINDOWS, DEFAULT_PRECISION, DEFAULT_SEARCHES, DEFAULT_WINDOWS,
};

/// The SLO search's flags, shared by `brigade load` and `brigade compare`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SloArgs {
    /// Find the highest open-loop rate at which this SLO holds, e.g. `p99<10ms`, `p99.9<50ms`,
    /// `errors<0.1%` (repeatable: every one must hold; upper bounds on mean, p50, p90, p99,
    /// p99.9, max or errors)
    #[arg(long = "slo", value_name = "EXPR")]
    pub slo: Vec<String>,
    /// The SLO search's first rate, requests/s [default: half the rate a closed-loop run at the
    /// same connections completes]
    #[arg(long, value_name = "PER_S", value_parser = brigade_load::parse::parse_rate)]
    pub slo_start: Option<f64>,
    /// The SLO search's precision, percent: bisect until the bracket's ends are this close
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_PRECISION * 100.0,
          value_parser = brigade_load::parse::parse_percent)]
    pub slo_precision: f64,
    /// Sub-windows (of --duration each) one step measures; a rate is judged on all its steps'
    /// sub-windows pooled, the sub-window as the unit
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WINDOWS)]
    pub slo_windows: u32,
    /// Sub-windows a rate may pool while its answer is not yet known; past them it has failed
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_WINDOWS)]
    pub slo_max_windows: u32,
    /// Independent searches per runtime (compare: per runtime and cell, each on fresh servers):
    /// the samples of the capacity's interval
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SEARCHES, alias = "slo-repeats")]
    pub slo_searches: u32,
    /// Seconds of the stall probe before each round of searches (0: none)
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = brigade_load::parse::parse_duration)]
    pub slo_probe: std::time::Duration,
    /// Say how many server CPUs this many requests/s needs at the capacity found
    #[arg(long, value_name = "PER_S", value_parser = brigade_load::parse::parse_rate)]
    pub slo_target_rate: Option<f64>,
}

impl SloArgs {
    /// The SLOs, parsed and checked; empty when no `--slo` was given.
    pub fn slos(&self) -> anyhow::Result<Vec<Threshold>> {
        self.slo
            .iter()
            .map(|t| brigade_load::threshold::parse_slo(t))
            .collect()
    }

    /// The search's settings from `start_per_s` (the `--slo-start`, or the caller's).
    pub fn settings(&self, start_per_s: f64) -> anyhow::Result<SearchSettings> {
        let settings = SearchSettings {
            precision: self.slo_precision / 100.0,
            windows: self.slo_windows,
            max_windows: self.slo_max_windows,
            ..SearchSettings::from_start(start_per_s)
        };
        settings.check()?;
        if self.slo_searches == 0 {
            anyhow::bail!("--slo-searches must be at least 1");
        }
        if let Some(rate) = self.slo_target_rate {
            brigade_load::engine::check_rate("--slo-target-rate", rate)?;
        }
        Ok(settings)
    }
}
