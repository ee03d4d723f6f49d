//! What a comparison runs with, resolved from the command line ([`crate::cli`]): runtimes,
//! scenarios, user counts, preloads, timings, the CPU split, how to start the server; and a rough
//! estimate of how long it will take.

use std::path::PathBuf;
use std::time::Duration;

use brigade_load::Registry;

use brigade_meter::pin::CpuChoice;
use brigade_meter::servers::runtime_of;
use brigade_meter::servers::{Launch, ServerInfo};

/// Seconds of fixture setup and bookkeeping a run costs beyond warm-up and measurement (estimates).
const RUN_OVERHEAD_S: f64 = 0.3;

/// Seconds to start and stop one server process (estimates).
const START_OVERHEAD_S: f64 = 0.6;

/// Documents per second a server preloads at start-up, all collections together (a rough
/// estimate for the time estimate; a release build on the memory store).
const PRELOAD_PER_S: f64 = 300_000.0;

/// Everything a comparison needs, resolved from the command line.
#[derive(Debug, Clone)]
pub struct CompareSettings {
    /// The server binary and how to start it (see [`brigade_meter::servers`] for the contract).
    pub(crate) launch: Launch,
    /// What the binary said about itself (`runtimes --json`); empty when it was not asked.
    pub(crate) server_info: ServerInfo,
    /// The scenarios known by name (the engine's and those the binary registered).
    pub(crate) registry: Registry,
    /// Runtimes to compare, as the report names them: a runtime named twice is `hyper` and
    /// `hyper#2` (an A/A comparison); [`runtime_of`] gives the runtime a name serves with.
    pub(crate) runtimes: Vec<String>,
    /// The calibration knob per runtime name (`--handicap 'hyper#2=5'`): µs of CPU planted per
    /// request.
    pub(crate) handicaps: std::collections::BTreeMap<String, f64>,
    /// Store kind for every service.
    pub(crate) store: String,
    /// MongoDB URI for `--store mongo`.
    pub(crate) mongodb_uri: Option<String>,
    /// Scenarios (registered names or TOML files).
    pub(crate) scenarios: Vec<String>,
    /// Closed-loop user counts.
    pub(crate) users: Vec<u32>,
    /// Documents per collection preloaded before the fixtures (`[0]`: none).
    pub(crate) preloads: Vec<u64>,
    /// Measured time per run.
    pub(crate) duration: Duration,
    /// Warm-up per run.
    pub(crate) warmup: Duration,
    /// Isolated runs per cell.
    pub(crate) repeat: u32,
    /// Whether to make the isolated runs (closed loop, one runtime alone on its CPUs).
    pub(crate) isolated: bool,
    /// The side-by-side efficiency runs.
    pub(crate) side: SideSettings,
    /// `--workers` for the servers (default: the number of server CPUs).
    pub(crate) workers: Option<u32>,
    /// Generator threads (default: the number of generator CPUs).
    pub(crate) threads: Option<u32>,
    /// Per-request timeout.
    pub(crate) timeout: Duration,
    /// How verdicts are judged: equivalence margins and confidence.
    pub(crate) rule: brigade_report::verdict::Rule,
    /// How to split the CPUs.
    pub(crate) cpus: CpuChoice,
    /// Where the reports and logs go.
    pub(crate) out_dir: PathBuf,
    /// Whether `--quick` chose the defaults.
    pub(crate) quick: bool,
    /// Whether to show the generator's progress bar.
    pub(crate) progress: bool,
    /// The command line, for the report.
    pub(crate) command_line: String,
    /// Keep connections alive (false: a new connection per request, `--no-keepalive`).
    pub(crate) keepalive: bool,
    /// What every server and load speaks (`--protocols`' one protocol, `--streams`).
    pub(crate) wire: brigade_meter::wire::Wire,
    /// Open loop: requests per second offered to every runtime (`--rate`); `users` then counts
    /// the connections sending them.
    pub(crate) rate: Option<f64>,
    /// The generator's seed, the same for every run.
    pub(crate) seed: u64,
    /// Pass/fail thresholds checked against every run.
    pub(crate) thresholds: Vec<brigade_records::threshold::Threshold>,
    /// Saved reports of earlier runs to set this one against.
    pub(crate) baselines: Vec<PathBuf>,
    /// The conformance study whose figures the report shows (`--conformance-report`); None: the
    /// newest under `results/`.
    pub(crate) conformance_report: Option<PathBuf>,
    /// `--conformance`: run the quick conformance study for these runtimes once measured.
    pub(crate) conformance: bool,
    /// Servers compare did not start, by runtime (`--external`); empty: compare starts them.
    pub(crate) external: Vec<brigade_meter::servers::external::ExternalRuntime>,
    /// Lines the user adds to the report's setup section (`--setup-note LABEL=TEXT`).
    pub(crate) setup_notes: Vec<(String, String)>,
    /// `--slo`: the capacity search (and its flags), when asked for.
    pub(crate) slo: Option<SloPlan>,
}

/// Side-by-side windows per level and round by default. Few: a round's windows share one set of
/// server instances, and the instances' own difference (the larger part of a round's scatter
/// with seven servers on one CPU) shrinks only with more rounds.
pub(crate) const DEFAULT_WINDOWS: u32 = 2;

/// The fewest rounds worth an interval: three degrees of freedom for a pair.
pub(crate) const MIN_ROUNDS: u32 = 4;

/// The default rounds for `runtimes` runtimes: the fewest that are a multiple of their number and
/// at least [`MIN_ROUNDS`], so that the rotation gives every runtime every place in the order
/// equally often (the analysis then removes the places' own cost; `brigade_stats::all_pairs`).
pub(crate) fn balanced_rounds(runtimes: usize) -> u32 {
    let k = runtimes.max(1) as u32;
    MIN_ROUNDS.div_ceil(k) * k
}

/// Seconds counted by `perf stat` after each level's windows by default.
pub(crate) const DEFAULT_COUNT_S: u32 = 1;

/// The side-by-side settings of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SideSettings {
    /// Whether to run side by side at all.
    pub enabled: bool,
    /// Load levels as shares of the server CPUs in total (0.4, 0.8), when rates are not given.
    pub levels: Vec<f64>,
    /// Offered rates per runtime, requests/s (`--side-by-side-rates`), replacing the levels.
    pub rates: Option<Vec<f64>>,
    /// Rounds per level, each on fresh servers of every runtime.
    pub rounds: u32,
    /// Measured windows per level and round.
    pub windows: u32,
    /// Length of one window, whole seconds.
    pub window_s: u32,
    /// Warm-up before the first window.
    pub warmup: Duration,
    /// Seconds of extra load counted by `perf stat` after the windows (0: no counts).
    pub count_s: u32,
    /// Extra time for more rounds where a level is undecided after its first look.
    pub budget: Duration,
    /// Count instructions per request under callgrind (`--instructions`).
    pub instructions: bool,
}

impl Default for SideSettings {
    fn default() -> SideSettings {
        SideSettings {
            enabled: true,
            levels: vec![0.4, 0.8],
            rates: None,
            rounds: MIN_ROUNDS,
            windows: DEFAULT_WINDOWS,
            window_s: 1,
            warmup: Duration::from_millis(500),
            count_s: DEFAULT_COUNT_S,
            budget: Duration::ZERO,
            instructions: false,
        }
    }
}

/// What `compare --slo` searches with.
#[derive(Debug, Clone)]
pub(crate) struct SloPlan {
    /// The SLOs, every one to hold.
    pub slos: Vec<brigade_records::threshold::Threshold>,
    /// The search's flags (start, precision, sub-windows, searches, probe, target rate).
    pub args: brigade_load::args::SloArgs,
    /// The search's settings from those flags, checked; each search takes its own start rate.
    pub search: brigade_slo::SearchSettings,
}

/// Steps a search takes about, for the estimate: a ramp, a bisection, the rechecks of its ends
/// and the extensions of rates not yet known (14–55, mean 26, in the 18 searches of
/// `compare --slo 'p99<10ms' --scenarios waiter,read-heavy --users 20 --runtimes hyper,actix,axum`
/// on the 2-core machine, docs/results.md).
const SLO_STEPS: f64 = 26.0;

/// Names every runtime in `runtimes` once: the second `hyper` becomes `hyper#2`, the third
/// `hyper#3` (an A/A comparison keeps its copies apart).
pub(crate) fn label_runtimes(runtimes: &[String]) -> Vec<String> {
    let mut seen: std::collections::BTreeMap<&str, u32> = std::collections::BTreeMap::new();
    runtimes
        .iter()
        .map(|r| {
            let n = seen.entry(runtime_of(r)).or_insert(0);
            *n += 1;
            if *n == 1 || r.contains('#') {
                r.clone()
            } else {
                format!("{}#{n}", runtime_of(r))
            }
        })
        .collect()
}

impl CompareSettings {
    /// The services every run's server will announce, when known before it starts: what the
    /// binary's `runtimes --json` lists, when started with the standard flags (`--service all`).
    pub(crate) fn expected_services(&self) -> Option<Vec<String>> {
        (self.launch.serves_all() && !self.server_info.services.is_empty())
            .then(|| self.server_info.services.clone())
    }

    /// Number of isolated load runs the settings ask for.
    pub(crate) fn run_count(&self) -> usize {
        if !self.isolated {
            return 0;
        }
        self.runtimes.len()
            * self.scenarios.len()
            * self.users.len()
            * self.preloads.len()
            * self.repeat as usize
    }

    /// A rough wall-clock estimate, seconds.
    pub(crate) fn estimate_s(&self) -> f64 {
        let per_run = self.duration.as_secs_f64()
            + self.warmup.as_secs_f64()
            + RUN_OVERHEAD_S
            + START_OVERHEAD_S;
        // Every run pays its preload at start-up, except on the embedded store, which fills a
        // folder once per preload and copies it.
        let documents: f64 = self.preloads.iter().map(|&n| n as f64 * 3.0).sum();
        let fills = if self.store == "embedded" {
            documents
        } else {
            documents * (self.run_count() / self.preloads.len().max(1)) as f64
        };
        let side = &self.side;
        let levels = side.rates.as_ref().map_or(side.levels.len(), Vec::len) as f64;
        let per_level = side.warmup.as_secs_f64()
            + f64::from(side.windows * side.window_s)
            + RUN_OVERHEAD_S * 2.0;
        // Servers start at once, a round's start costs about two servers' worth; the first round
        // adds the probes and the counting windows.
        let per_round = levels * per_level + START_OVERHEAD_S * 2.0;
        let first_round_extra = 2.0 * (1.0 + RUN_OVERHEAD_S) + levels * f64::from(side.count_s);
        let side_s = if side.enabled {
            (self.scenarios.len() * self.users.len() * self.preloads.len()) as f64
                * (f64::from(side.rounds.max(1)) * per_round + first_round_extra)
                + side.budget.as_secs_f64()
        } else {
            0.0
        };
        let slo_s = self.slo.as_ref().map_or(0.0, |slo| {
            let probe = if slo.args.slo_start.is_some() {
                0.0
            } else {
                per_run
            };
            // A step measures its sub-windows; some rates take more than one step.
            let step = per_run - self.duration.as_secs_f64()
                + self.duration.as_secs_f64() * f64::from(slo.args.slo_windows);
            let searches = f64::from(slo.args.slo_searches);
            (self.scenarios.len() * self.users.len() * self.preloads.len()) as f64
                * (searches * slo.args.slo_probe.as_secs_f64()
                    + self.runtimes.len() as f64 * (probe + searches * SLO_STEPS * step))
        });
        self.run_count() as f64 * per_run + fills / PRELOAD_PER_S + side_s + slo_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(store: &str, preloads: Vec<u64>, repeat: u32) -> CompareSettings {
        CompareSettings {
            launch: Launch::Binary("brigade".into()),
            server_info: ServerInfo::default(),
            registry: Registry::new(),
            runtimes: vec!["a".into(), "b".into(), "c".into()],
            handicaps: Default::default(),
            store: store.into(),
            mongodb_uri: None,
            scenarios: vec!["s".into(), "t".into()],
            users: vec![10, 20],
            preloads,
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            repeat,
            isolated: true,
            side: SideSettings {
                enabled: false,
                ..Default::default()
            },
            workers: None,
            threads: None,
            timeout: Duration::from_secs(1),
            rule: brigade_report::verdict::Rule::default(),
            cpus: CpuChoice::Auto,
            out_dir: "out".into(),
            quick: false,
            progress: false,
            command_line: String::new(),
            keepalive: true,
            wire: Default::default(),
            rate: None,
            seed: 1,
            thresholds: Vec::new(),
            baselines: Vec::new(),
            conformance_report: None,
            conformance: false,
            external: Vec::new(),
            setup_notes: Vec::new(),
            slo: None,
        }
    }

    #[test]
    fn a_runtime_named_twice_gets_a_second_name_that_serves_with_the_same_runtime() {
        let labels = label_runtimes(&[
            "hyper".into(),
            "actix".into(),
            "hyper".into(),
            "hyper".into(),
        ]);
        assert_eq!(labels, ["hyper", "actix", "hyper#2", "hyper#3"]);
        assert_eq!(runtime_of("hyper#2"), "hyper");
        assert_eq!(runtime_of("axum"), "axum");
    }

    #[test]
    fn the_estimate_counts_every_run_and_every_preload_fill() {
        let s = settings("memory", vec![0], 1);
        assert_eq!(s.run_count(), 12);
        assert!(s.estimate_s() >= 12.0);
        // Memory fills at every start, embedded once per preload.
        let memory = settings("memory", vec![0, 1_000_000], 1);
        let embedded = settings("embedded", vec![0, 1_000_000], 1);
        assert_eq!(memory.run_count(), 24);
        assert!(memory.estimate_s() > embedded.estimate_s() + 60.0);
    }
}
