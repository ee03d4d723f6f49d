//! How every run's store state was made fresh, and the preloaded data prepared for it.

use std::collections::BTreeMap;

use brigade_records::stop::StopOutcome;
use serde::{Deserialize, Serialize};

/// How the store state of every run was made fresh.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateSetup {
    /// In words: what each run started from (empty for reports made before runs had their own
    /// servers).
    pub how: String,
    /// Preloaded data folders prepared once and copied for each run (the embedded store).
    pub prepared: Vec<PreparedState>,
}

/// A data folder filled once with `--preload` and copied for every run that needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreparedState {
    /// Documents per collection.
    pub preload: u64,
    /// Seconds the preparing server took from spawn to ready (the fill included).
    pub startup_s: f64,
    /// Seconds the fill itself took, as the server reported it (all collections).
    pub fill_s: f64,
    /// Bytes of the folder.
    pub bytes: u64,
    /// How the preparing server ended.
    pub stop: Option<StopOutcome>,
    /// Its log file.
    pub log: String,
}

/// How one run's fresh store state was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateReset {
    /// The fresh server process the run was made on.
    pub pid: u32,
    /// In words: `fresh data folder`, `copy of the prepared 1,000-document folder`, `fresh
    /// process`, `fresh databases run7_*`.
    pub how: String,
    /// Seconds spent copying a prepared data folder, before the server started (not measured).
    pub copy_s: Option<f64>,
    /// Seconds the server spent preloading at start-up, as it reported them (all collections).
    pub preload_s: Option<f64>,
    /// Documents the server said it preloaded, per collection.
    pub preloaded: BTreeMap<String, u64>,
    /// Seconds from spawn to every service ready (any preload included).
    pub startup_s: f64,
}
