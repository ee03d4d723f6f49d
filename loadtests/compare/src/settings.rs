//! What a comparison runs with, resolved from the command line ([`crate::cli`]): runtimes,
//! scenarios, user counts, preloads, timings, the CPU split, how to start the server; and a rough
//! estimate of how long it will take.

use std::path::PathBuf;
use std::time::Duration;

use brigade_load::Registry;

use crate::pin::CpuPlan;
use crate::servers::{Launch, ServerInfo};

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
    /// The server binary and how to start it (see [`crate::servers`] for the contract).
    pub launch: Launch,
    /// What the binary said about itself (`runtimes --json`); empty when it was not asked.
    pub server_info: ServerInfo,
    /// The scenarios known by name (the engine's and those the binary registered).
    pub registry: Registry,
    /// Runtimes to compare.
    pub runtimes: Vec<String>,
    /// Store kind for every service.
    pub store: String,
    /// MongoDB URI for `--store mongo`.
    pub mongodb_uri: Option<String>,
    /// Scenarios (registered names or TOML files).
    pub scenarios: Vec<String>,
    /// Closed-loop user counts.
    pub users: Vec<u32>,
    /// Documents per collection preloaded before the fixtures (`[0]`: none).
    pub preloads: Vec<u64>,
    /// Measured time per run.
    pub duration: Duration,
    /// Warm-up per run.
    pub warmup: Duration,
    /// Runs per cell.
    pub repeat: u32,
    /// `--workers` for the servers (default: the number of server CPUs).
    pub workers: Option<u32>,
    /// Generator threads (default: the number of generator CPUs).
    pub threads: Option<u32>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Differences under this percentage are ties.
    pub noise_floor_pct: f64,
    /// How to split the CPUs.
    pub cpus: CpuChoice,
    /// Where the reports and logs go.
    pub out_dir: PathBuf,
    /// Whether `--quick` chose the defaults.
    pub quick: bool,
    /// Whether to show the generator's progress bar.
    pub progress: bool,
    /// The command line, for the report.
    pub command_line: String,
    /// Keep connections alive (false: a new connection per request, `--no-keepalive`).
    pub keepalive: bool,
    /// Open loop: requests per second offered to every runtime (`--rate`); `users` then counts
    /// the connections sending them.
    pub rate: Option<f64>,
    /// The generator's seed, the same for every run.
    pub seed: u64,
    /// Pass/fail thresholds checked against every run.
    pub thresholds: Vec<brigade_load::threshold::Threshold>,
    /// A saved report to set this one against.
    pub baseline: Option<PathBuf>,
    /// Servers compare did not start, by runtime (`--external`); empty: compare starts them.
    pub external: Vec<crate::servers::external::ExternalRuntime>,
    /// Lines the user adds to the report's setup section (`--setup-note LABEL=TEXT`).
    pub setup_notes: Vec<(String, String)>,
}

/// How the CPUs are split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuChoice {
    /// Half and half (see [`CpuPlan::split`]).
    Auto,
    /// Nothing pinned.
    NoPin,
    /// These CPUs for the servers, those for the generator.
    Explicit {
        /// Server CPUs.
        server: Vec<usize>,
        /// Generator CPUs.
        generator: Vec<usize>,
    },
}

impl CpuChoice {
    /// The CPU split this choice makes of the `available` CPUs.
    pub fn plan(&self, available: &[usize]) -> anyhow::Result<CpuPlan> {
        Ok(match self {
            CpuChoice::Auto => CpuPlan::split(available),
            CpuChoice::NoPin => CpuPlan::unpinned(available),
            CpuChoice::Explicit { server, generator } => {
                CpuPlan::explicit(available, server, generator)?
            }
        })
    }
}

impl CompareSettings {
    /// The services every run's server will announce, when known before it starts: what the
    /// binary's `runtimes --json` lists, when started with the standard flags (`--service all`).
    pub fn expected_services(&self) -> Option<Vec<String>> {
        (self.launch.serves_all() && !self.server_info.services.is_empty())
            .then(|| self.server_info.services.clone())
    }

    /// Number of load runs the settings ask for.
    pub fn run_count(&self) -> usize {
        self.runtimes.len()
            * self.scenarios.len()
            * self.users.len()
            * self.preloads.len()
            * self.repeat as usize
    }

    /// A rough wall-clock estimate, seconds.
    pub fn estimate_s(&self) -> f64 {
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
        self.run_count() as f64 * per_run + fills / PRELOAD_PER_S
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
            store: store.into(),
            mongodb_uri: None,
            scenarios: vec!["s".into(), "t".into()],
            users: vec![10, 20],
            preloads,
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            repeat,
            workers: None,
            threads: None,
            timeout: Duration::from_secs(1),
            noise_floor_pct: 5.0,
            cpus: CpuChoice::Auto,
            out_dir: "out".into(),
            quick: false,
            progress: false,
            command_line: String::new(),
            keepalive: true,
            rate: None,
            seed: 1,
            thresholds: Vec::new(),
            baseline: None,
            external: Vec::new(),
            setup_notes: Vec::new(),
        }
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

/// The CPU flags every command that starts servers takes (`compare` and the studies).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CpuArgs {
    /// Pin nothing: servers and generator share every CPU
    #[arg(long, conflicts_with_all = ["server_cpus", "generator_cpus"])]
    pub no_pin: bool,
    /// CPUs for the servers, e.g. 0-3 (with --generator-cpus)
    #[arg(long, requires = "generator_cpus")]
    pub server_cpus: Option<String>,
    /// CPUs for the generator, e.g. 4-7 (with --server-cpus)
    #[arg(long, requires = "server_cpus")]
    pub generator_cpus: Option<String>,
}

impl CpuArgs {
    /// The choice these flags make.
    pub fn choice(&self) -> anyhow::Result<CpuChoice> {
        Ok(
            match (self.server_cpus.as_deref(), self.generator_cpus.as_deref()) {
                (Some(server), Some(generator)) => CpuChoice::Explicit {
                    server: crate::pin::parse_list(server)?,
                    generator: crate::pin::parse_list(generator)?,
                },
                _ if self.no_pin => CpuChoice::NoPin,
                _ => CpuChoice::Auto,
            },
        )
    }
}
