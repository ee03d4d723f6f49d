//! The settings a comparison ran with, as its report records them, and their words.

use std::collections::BTreeMap;

use crate::verdict::count;
use crate::{render, setup};
use serde::{Deserialize, Serialize};

/// The settings of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The runtimes compared, in the order given.
    pub runtimes: Vec<String>,
    /// The store every service used.
    pub store: String,
    /// The scenarios run.
    pub scenarios: Vec<String>,
    /// The closed-loop user counts.
    pub users: Vec<u32>,
    /// Documents preloaded per collection before the fixtures, one value per cell (`[0]`: none).
    #[serde(default = "no_preload")]
    pub preloads: Vec<u64>,
    /// Measured seconds per run.
    pub duration_s: f64,
    /// Warm-up seconds per run (not counted).
    pub warmup_s: f64,
    /// Runs per runtime, scenario and user count.
    pub repeat: u32,
    /// The verdicts' rule: equivalence margin and confidence.
    #[serde(default)]
    pub rule: crate::verdict::Rule,
    /// The side-by-side settings, in words (absent: no side-by-side runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_by_side: Option<SideSetup>,
    /// Calibration handicaps planted per runtime, µs per request (`--handicap`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handicaps: BTreeMap<String, f64>,
    /// Each runtime compared that is another runtime's adapter on another I/O engine, with that
    /// sibling when it was compared too (`ntex-uring` → `ntex`): judged as a pair.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub engine_variants: BTreeMap<String, String>,
    /// Per-request timeout, milliseconds.
    pub timeout_ms: u64,
    /// Whether `--quick` chose the defaults.
    pub quick: bool,
    /// How runs were interleaved across runtimes, in words.
    pub interleaving: String,
    /// The command line as given.
    pub command_line: String,
    /// The services the server announced, in order (empty in reports made before servers
    /// announced them).
    #[serde(default)]
    pub services: Vec<String>,
    /// How every server was started: its command, placeholders unfilled.
    #[serde(default)]
    pub server_command: String,
    /// Whether the generator kept connections alive (false: a connection per request).
    #[serde(default = "kept_alive")]
    pub keepalive: bool,
    /// The protocol every server and load spoke (`h1` in reports made before protocols).
    #[serde(default)]
    pub protocol: brigade_records::protocol::Protocol,
    /// HTTP/2 requests in flight per connection (1 over HTTP/1.1 and in older reports).
    #[serde(default = "one_stream")]
    pub streams: u32,
    /// Open loop: the requests per second every runtime was offered (`None`: closed loop).
    #[serde(default)]
    pub rate: Option<f64>,
    /// The seed of the generator's random choices, the same for every run, so every runtime
    /// received the same request stream (absent in reports made before).
    #[serde(default)]
    pub seed: Option<u64>,
    /// The `--threshold`s, as given.
    #[serde(default)]
    pub thresholds: Vec<String>,
    /// Lines the user added to the setup section (`--setup-note`), e.g. how external servers ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup_notes: Vec<setup::SetupLine>,
    /// Whether the servers were external (`--external`): compare neither started nor configured them.
    #[serde(default)]
    pub external: bool,
    /// How the `--slo` searches were made, when there were any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<SloSetup>,
}

/// How the `--slo` searches were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloSetup {
    /// The SLOs, every one to hold.
    pub slo: Vec<String>,
    /// The bracket's precision, percent.
    pub precision_pct: f64,
    /// Sub-windows per step.
    #[serde(default)]
    pub windows: u32,
    /// Sub-windows a rate may pool before not yet known counts as failed.
    #[serde(default)]
    pub max_windows: u32,
    /// Independent searches per runtime and cell.
    #[serde(default)]
    pub searches: u32,
    /// `--slo-start`, when given.
    #[serde(default)]
    pub start_per_s: Option<f64>,
    /// `--slo-target-rate`, when given.
    #[serde(default)]
    pub target_rate_per_s: Option<f64>,
    /// Seconds per sub-window.
    pub window_s: f64,
    /// Warm-up seconds per step.
    pub warmup_s: f64,
    /// How each step's server was made, and the order of the steps.
    pub interleaving: String,
}

/// What the isolated runs (or, without them, the SLO search's steps) measured, in words.
pub(crate) fn runs_words(s: &Settings) -> String {
    let window = format!(
        "{} s measured after {} s warm-up",
        render::trim(s.duration_s),
        render::trim(s.warmup_s)
    );
    match &s.slo {
        Some(slo) if s.repeat == 0 => format!(
            "no isolated runs (--slo): every search step {} sub-windows of {} s after {} s warm-up",
            slo.windows,
            render::trim(s.duration_s),
            render::trim(s.warmup_s)
        ),
        _ => format!("isolated runs: {window}, repeat {}", s.repeat),
    }
}

/// How the side-by-side runs were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideSetup {
    /// Load levels, shares of the server CPUs (when rates were not given).
    pub levels: Vec<f64>,
    /// Rates given per runtime (`--side-by-side-rates`).
    pub rates: Option<Vec<f64>>,
    /// Rounds per level at the first look, each on fresh servers (reports written before rounds:
    /// 0, one round of `windows`).
    #[serde(default)]
    pub rounds: u32,
    /// Measured windows per level and round.
    pub windows: u32,
    /// Seconds per window.
    pub window_s: u32,
    /// Warm-up seconds before the first window.
    pub warmup_s: f64,
    /// Seconds counted by `perf stat` after the windows (0: none).
    pub count_s: u32,
    /// Extra seconds allowed for more rounds of undecided levels.
    pub budget_s: f64,
}

fn kept_alive() -> bool {
    true
}

fn no_preload() -> Vec<u64> {
    vec![0]
}

/// The verdicts' rule in words: `equivalence ±2% efficiency, ±5% throughput; 95% intervals`.
pub fn rule_words(rule: &crate::verdict::Rule) -> String {
    use crate::verdict::Measure;
    format!(
        "equivalence margin ±{}% efficiency, ±{}% throughput; {}% confidence intervals",
        render::trim(rule.margin_pct(Measure::Efficiency)),
        render::trim(rule.margin_pct(Measure::Throughput)),
        render::trim(rule.confidence_pct)
    )
}

/// The side-by-side settings in words.
pub fn side_words(side: &SideSetup) -> String {
    let levels = match &side.rates {
        Some(rates) => format!(
            "given rates {} requests/s per runtime",
            rates
                .iter()
                .map(|r| rate_words(*r))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!(
            "load levels {} of the server CPUs in total (each cell's rates guessed from its \
             isolated runs, then corrected by two 1-window probes side by side)",
            side.levels
                .iter()
                .map(|l| format!("{:.0}%", l * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!(
        "every runtime's server alive at once on the server CPUs, each driven open loop at the same \
         rate with the same seed; {levels}; {} windows of {} s after {} s warm-up, each server's \
         CPU from its CPU-time clock (ns, exited threads included); then {} s counted by perf \
         stat (syscalls, context switches); up to {} s more windows for undecided levels \
         (--budget)",
        side.windows,
        side.window_s,
        render::trim(side.warmup_s),
        side.count_s,
        render::trim(side.budget_s)
    )
}

/// One stream per connection: the default of reports made before protocols.
fn one_stream() -> u32 {
    1
}

/// How the load was offered, in words: `closed loop, keep-alive` or `open loop at 2,000
/// requests/s, a connection per request`, and the protocol when it is not plaintext HTTP/1.1
/// (`, over h2-tls, 4 stream(s) per connection`).
pub fn load_words(s: &Settings) -> String {
    let over = if s.protocol == brigade_records::protocol::Protocol::H1 {
        String::new()
    } else {
        format!(", over {}", s.protocol.describe(s.streams))
    };
    format!(
        "{}, {}{over}",
        match (s.rate, &s.slo) {
            (Some(rate), _) => format!("open loop at {} requests/s", rate_words(rate)),
            (None, Some(_)) if s.repeat == 0 => "open loop at the search's rates".to_owned(),
            (None, _) => "closed loop".to_owned(),
        },
        if s.keepalive {
            "keep-alive"
        } else {
            "a new connection per request"
        }
    )
}

/// A rate as a reader wants it: `40`, `2,000`, `12.5`.
pub fn rate_words(rate: f64) -> String {
    if rate.fract() == 0.0 && rate < 1e15 {
        count(rate as u64)
    } else {
        render::trim(rate)
    }
}
