//! One step of a search, as its driver and the search exchange it: the [`Stage`] that asked for
//! it, and what it [`Measured`] (its totals and sub-windows, and who set its pace).

use brigade_records::threshold::Figures;
use serde::{Deserialize, Serialize};

use crate::evidence::WindowFigures;

/// Which stage of the search a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The exponential ramp.
    Ramp,
    /// The bisection of the bracket.
    Bisect,
    /// The same rate again: its answer was not yet known.
    Extend,
    /// A bracket end (or one side of a contradiction) measured again on a fresh visit.
    Recheck,
    /// A confirmation window (reports written before the pooled search).
    Confirm,
}

impl Stage {
    /// Its name, as `report.json` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Ramp => "ramp",
            Stage::Bisect => "bisect",
            Stage::Extend => "extend",
            Stage::Recheck => "recheck",
            Stage::Confirm => "confirm",
        }
    }
}

/// What one step measured, as its driver saw it.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// The rate the step offered, requests/s.
    pub offered_per_s: f64,
    /// Requests completed per second of the measured window.
    pub achieved_per_s: f64,
    /// The window's totals.
    pub figures: Figures,
    /// Its sub-windows, each with an exact histogram (one for the whole window when the run kept
    /// none).
    pub windows: Vec<WindowFigures>,
    /// Why the generator, not the server, set the pace, if it did (its CPUs saturated).
    pub generator_bound: Option<String>,
    /// The server's CPU per request over the window, µs, when it was sampled.
    pub server_cpu_us_per_request: Option<f64>,
    /// Why the step measured nothing (a server that did not start), if so.
    pub failed: Option<String>,
    /// Why other processes' CPU use makes the step's figures suspect, if it does (the step still
    /// counts: its latency includes the contention, as a user's would).
    pub contended: Option<String>,
}

impl Measured {
    /// What a run at `offered_per_s` measured: its completed rate, totals and sub-windows (who set
    /// the pace, the server's CPU and contention are the driver's to add).
    pub fn from_result(
        offered_per_s: f64,
        result: &brigade_records::result::LoadResult,
    ) -> Measured {
        let windows = if result.sub_windows.is_empty() {
            vec![WindowFigures {
                requests: result.total.requests,
                errors: result.total.errors.total(),
                latency: result.total.histogram().unwrap_or_default(),
            }]
        } else {
            result
                .sub_windows
                .iter()
                .map(|w| WindowFigures {
                    requests: w.requests,
                    errors: w.errors,
                    latency: brigade_records::histogram::LatencyHistogram::decode(&w.histogram)
                        .unwrap_or_default(),
                })
                .collect()
        };
        Measured {
            offered_per_s,
            achieved_per_s: result.total.requests as f64 / result.elapsed_s.max(1e-9),
            figures: Figures::from(&result.total),
            windows,
            ..Measured::default()
        }
    }

    /// A step at `offered_per_s` that measured nothing, and why.
    pub fn failed(offered_per_s: f64, why: String) -> Measured {
        Measured {
            offered_per_s,
            failed: Some(why),
            ..Measured::default()
        }
    }
}
