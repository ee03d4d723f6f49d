//! The `brigade compare` command line: its arguments, their defaults (the default run with every
//! runtime takes about 17 minutes on a 2-core machine and `--quick` about 3.5: README.md), and the
//! entry point. A binary mounts
//! it as a subcommand and hands it the [`Registry`] of the scenarios it knows; by default compare
//! runs those the binary registered.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use brigade_clients::Protocol;
use brigade_load::Registry;
use brigade_meter::wire::Wire;
use clap::Args;

use crate::report::markdown;
use crate::servers::external::ExternalSpec;
use crate::servers::{Launch, ServerInfo};
use crate::settings::{CompareSettings, CpuArgs};
use crate::verdict;

/// User counts run by default (the study's).
pub const DEFAULT_USERS: &str = "10,20,30";
/// Measured time per run by default.
pub const DEFAULT_DURATION: &str = "1s";
/// Warm-up per run by default.
pub const DEFAULT_WARMUP: &str = "500ms";
/// Isolated runs per cell by default: one, since efficiency is judged side by side and throughput
/// from the run's seconds.
pub const DEFAULT_REPEAT: u32 = 1;
/// Extra time for undecided side-by-side levels by default.
pub const DEFAULT_BUDGET: &str = "1m";
/// Side-by-side load levels by default, shares of the server CPUs in total.
pub const DEFAULT_LEVELS: [f64; 2] = [0.4, 0.8];
/// `--quick`: one side-by-side load level.
pub const QUICK_LEVELS: [f64; 1] = [0.6];
/// `--quick`: user counts.
pub const QUICK_USERS: &str = "10";
/// `--quick`: measured time per run.
pub const QUICK_DURATION: &str = "1s";
/// `--quick`: warm-up per run.
pub const QUICK_WARMUP: &str = "500ms";

/// Asks the database server at a URI what it is (name and version, in words).
pub type DescribeServer = fn(uri: &str) -> anyhow::Result<String>;

/// Arguments of `brigade compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Runtimes to compare, comma-separated; one named twice is compared with itself (the second
    /// is reported as `hyper#2`); `all` for every runtime the binary has [default: every one but
    /// the I/O-engine variants such as `ntex-uring`]
    #[arg(long, value_delimiter = ',')]
    pub runtimes: Vec<String>,
    /// Calibration: plant a known CPU cost per request in one runtime's servers, as NAME=µs (e.g.
    /// `hyper#2=5`; `serve --handicap-us`); repeatable
    #[arg(long = "handicap", value_name = "NAME=US")]
    pub handicaps: Vec<String>,
    /// Store every service uses, one of the server binary's (its `runtimes` lists them)
    #[arg(long, default_value = "embedded")]
    pub store: String,
    /// Stores as a dimension, comma-separated (e.g. memory,embedded,mongo): a whole comparison per
    /// store (under OUT/store-NAME), then one report setting every runtime's figures on each store
    /// against memory ("with a database the services are N× slower"); replaces --store
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["external", "rejudge"])]
    pub stores: Vec<String>,
    /// Protocols as a dimension, comma-separated (h1, h2c, h1-tls, h2-tls, h3): a whole comparison
    /// per protocol (under OUT/protocol-P; servers started with `--protocol h2c`,
    /// `--tls-self-signed` or `--protocol h3 --tls-self-signed`; over h3 only the runtimes that
    /// offer it, the others left out and named), then one report setting every runtime's figures
    /// over each protocol against h1; one protocol: a single comparison over it [default: h1]
    #[arg(long, value_delimiter = ',', conflicts_with = "rejudge")]
    pub protocols: Vec<Protocol>,
    /// HTTP/2 (h2c, h2-tls) and HTTP/3 (h3): requests in flight per connection, per user or paced connection
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub streams: u32,
    /// MongoDB URI for --store mongo
    #[arg(long, env = "MONGODB_URI")]
    pub mongodb_uri: Option<String>,
    /// How this binary asks a MongoDB server what it is, for the `--stores` report's line on
    /// mongo: a binary that links a MongoDB client fills it; `None` says it cannot ask.
    #[arg(skip)]
    pub describe_mongo: Option<DescribeServer>,
    /// Scenarios, comma-separated: registered names or TOML files
    /// [default: the scenarios this binary registered]
    #[arg(long, value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// Closed-loop user counts, comma-separated [default: 10,20,30; --quick: 10]
    #[arg(long, value_delimiter = ',')]
    pub users: Vec<u32>,
    /// Documents per collection to preload before the fixtures, comma-separated: a dimension like
    /// --users (e.g. 1000,1000000) [default: 0]
    #[arg(long, value_delimiter = ',', value_name = "N[,N...]")]
    pub preload: Vec<u64>,
    /// Measured time per isolated run, e.g. 3s, 1m [default: 2s; --quick: 2s]
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Warm-up per run, not counted [default: 500ms; --quick: 500ms]
    #[arg(long, value_parser = humantime::parse_duration)]
    pub warmup: Option<Duration>,
    /// Isolated runs per runtime, scenario and user count, 1 to 1000 [default: 1]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// Side by side: offer every runtime these rates (requests/s each, comma-separated) instead of
    /// the default load levels (about 40% and 80% of the server CPUs, from the isolated runs)
    #[arg(long, value_delimiter = ',', value_name = "R[,R...]")]
    pub side_by_side_rates: Vec<f64>,
    /// Side by side: rounds per load level, each on fresh servers of every runtime; the verdicts'
    /// intervals come from the rounds [default: the fewest that are a multiple of the runtimes
    /// and at least 4, so every runtime takes every place in the rotated order equally often;
    /// --quick: 4]
    #[arg(long, value_name = "N")]
    pub rounds: Option<u32>,
    /// Side by side: measured 1-second windows per load level in each round [default: 2]
    #[arg(long, value_name = "N")]
    pub windows: Option<u32>,
    /// Side by side: seconds of extra load after the windows in which `perf stat` counts syscalls
    /// and context switches (0: no counts) [default: 1]
    #[arg(long, value_name = "S")]
    pub count_seconds: Option<u32>,
    /// After every cell's first look, add rounds (fresh servers) to the side-by-side levels still
    /// undecided, those nearest to deciding first, until this much extra time is spent; the error
    /// rate is split between the two looks so the stated confidence holds [default: 1m;
    /// --quick: 0s]
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub budget: Option<Duration>,
    /// Count instructions per request: each runtime's server under valgrind's callgrind, per
    /// scenario at the first user count, 1,000, 2,000 and 3,000 requests (the N2−N1 method; the
    /// spread of its two samples is shown). Slow: minutes per runtime
    #[arg(long)]
    pub instructions: bool,
    /// No side-by-side runs: isolated runs only (no efficiency verdicts)
    #[arg(long, conflicts_with = "no_isolated")]
    pub no_side_by_side: bool,
    /// No isolated runs: side by side only (needs --side-by-side-rates; no throughput verdicts)
    #[arg(long, requires = "side_by_side_rates")]
    pub no_isolated: bool,
    /// Worker threads for every runtime [default: the number of server CPUs]
    #[arg(long)]
    pub workers: Option<u32>,
    /// Generator threads [default: the number of generator CPUs]
    #[arg(long)]
    pub threads: Option<u32>,
    /// Per-request timeout
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub timeout: Duration,
    /// Equivalence margin, percent, for every measure: a ratio whose whole interval lies inside
    /// ±PCT is equivalent, beyond it a win [default: 2 for efficiency, 5 for throughput]
    #[arg(long, value_name = "PCT")]
    pub equivalence: Option<f64>,
    /// Confidence level of the intervals, percent
    #[arg(long, value_name = "PCT", default_value_t = verdict::DEFAULT_CONFIDENCE_PCT)]
    pub confidence: f64,
    /// Where to write report.json, report.md, report.html and the server logs
    /// [default: results/compare-<UTC timestamp>]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A short comparison (one user count, one repeat, one side-by-side level, 4 rounds): about
    /// 3.5 minutes with seven runtimes on 2 cores
    #[arg(long)]
    pub quick: bool,
    /// The server binary: it takes the standard serve flags (`serve --runtime R --service all
    /// --listen ADDR --store S --data-dir D --workers N ...`), announces its services as JSON lines
    /// and lists its runtimes with `runtimes --json` (docs/embedding.md) [default: this executable]
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// Start each server with this command instead of the standard flags; placeholders:
    /// {binary} {runtime} {store} {listen} {port} {data_dir} {workers} {mongodb_uri} {preload}
    /// {database_prefix} (docs/embedding.md)
    #[arg(long, value_name = "TEMPLATE")]
    pub server_command: Option<String>,
    /// Where servers and generator run.
    #[command(flatten)]
    pub cpus: CpuArgs,
    /// Accepted for old command lines and ignored: every run now has a server of its own
    #[arg(long, hide = true)]
    pub one_at_a_time: bool,
    /// No progress bar during runs
    #[arg(long)]
    pub no_progress: bool,
    /// Open a new connection for every request (`Connection: close`), as `ab` without `-k`
    #[arg(long)]
    pub no_keepalive: bool,
    /// Open loop: offer every runtime this many requests per second on a fixed schedule (latency
    /// from the intended send time); --users then counts the connections sending them
    #[arg(long, value_name = "PER_S")]
    pub rate: Option<f64>,
    /// Seed of the generator's random choices, the same for every run, so every runtime receives
    /// the same request stream [default: one random seed per comparison, in the report]
    #[arg(long)]
    pub seed: Option<u64>,
    /// A pass/fail threshold checked against every run, e.g. `p99<5ms`, `errors<0.1%` (repeatable;
    /// as `brigade load --threshold`): the command exits non-zero when one fails and says which
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// A saved report (its report.json, or the folder holding it): the report shows each cell's
    /// change against it, changed or within noise by the verdicts' paired rule
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// A server compare did not start, as RUNTIME:SERVICE=URL (repeatable: one URL per service per
    /// runtime), for servers on other machines or in containers: compare checks its /ready and
    /// that /health names RUNTIME, loads it as it finds it (no fresh state, no --preload) and reads
    /// its CPU and memory from its /metrics
    #[arg(
        long = "external",
        value_name = "RUNTIME:SERVICE=URL",
        conflicts_with_all = ["binary", "server_command", "preload"]
    )]
    pub external: Vec<String>,
    /// What serves with an external runtime's servers on their CPUs (a database container), as
    /// RUNTIME:NAME=CGROUP (the path in /proc/PID/cgroup; repeatable): its CPU is read from the
    /// cgroup and counted as the server side's own use, not as contention, and kept apart from the
    /// server's figures
    #[arg(
        long = "external-companion",
        value_name = "RUNTIME:NAME=CGROUP",
        requires = "external"
    )]
    pub external_companions: Vec<String>,
    /// A cgroup an external runtime's server runs in (its container's: podman's
    /// `.State.CgroupPath`), as RUNTIME:NAME=CGROUP (repeatable, one per service container): its
    /// CPU in nanoseconds from the cgroup's accounting (cgroup v1 `cpuacct.usage`, v2 `cpu.stat`),
    /// summed per runtime. With one for every external runtime, the side-by-side levels run on the
    /// external servers too; without, they are skipped (`/metrics`' 10 ms ticks are too coarse)
    #[arg(
        long = "external-cgroup",
        value_name = "RUNTIME:NAME=CGROUP",
        requires = "external"
    )]
    pub external_cgroups: Vec<String>,
    /// A line for the report's setup section, as LABEL=TEXT (repeatable), e.g. how the external
    /// servers were run
    #[arg(long = "setup-note", value_name = "LABEL=TEXT")]
    pub setup_notes: Vec<String>,
    /// Capacity at an SLO: with `--slo`, compare searches every runtime's highest open-loop rate
    /// at which every SLO holds (per scenario, user count and preload; each step a `--warmup` and
    /// a `--duration` window on a fresh server) and judges the capacities; the isolated runs and
    /// side-by-side levels are skipped unless `--slo-also-compare`
    #[command(flatten)]
    pub slo: brigade_slo::SloArgs,
    /// With --slo: also make the isolated runs and side-by-side levels (their verdicts beside the
    /// capacity's; the search then starts from the isolated runs' rates)
    #[arg(long, requires = "slo")]
    pub slo_also_compare: bool,
    /// Run nothing: re-judge the report in DIR (its report.json) with the current rules,
    /// --equivalence and --confidence, and rewrite its report.json, report.md and report.html
    #[arg(long, value_name = "DIR")]
    pub rejudge: Option<PathBuf>,
    /// Run nothing: print the checked plan as JSON (the report's settings, the CPU split and
    /// threads, every isolated run and side-by-side cell, the time it expects); with --stores or
    /// several --protocols, one plan per comparison
    #[arg(long, conflicts_with = "rejudge")]
    pub plan: bool,
}

impl CompareArgs {
    /// The verdicts' rule these flags ask for.
    pub fn rule(&self) -> anyhow::Result<verdict::Rule> {
        if let Some(pct) = self.equivalence {
            if !(pct.is_finite() && pct > 0.0 && pct < 100.0) {
                bail!("--equivalence must be a percentage above 0 and below 100");
            }
        }
        if !(self.confidence.is_finite() && self.confidence >= 50.0 && self.confidence < 100.0) {
            bail!("--confidence must be a percentage from 50 to below 100");
        }
        Ok(verdict::Rule {
            equivalence_pct: self.equivalence,
            confidence_pct: self.confidence,
        })
    }

    /// The side-by-side settings these flags ask for.
    fn side(
        &self,
        cannot_sample: bool,
        runtimes: usize,
    ) -> anyhow::Result<crate::side::SideSettings> {
        for &rate in &self.side_by_side_rates {
            brigade_load::engine::check_rate("--side-by-side-rates", rate)?;
        }
        if self.windows == Some(0) {
            bail!("--windows must be at least 1");
        }
        if let Some(rounds) = self.rounds {
            if !(1..=crate::side::MAX_ROUNDS).contains(&rounds) {
                bail!("--rounds must be between 1 and {}", crate::side::MAX_ROUNDS);
            }
        }
        let budget = self.budget.unwrap_or_else(|| {
            if self.quick {
                Duration::ZERO
            } else {
                humantime::parse_duration(DEFAULT_BUDGET).expect("a valid default")
            }
        });
        Ok(crate::side::SideSettings {
            enabled: !self.no_side_by_side && !cannot_sample,
            levels: if self.quick {
                QUICK_LEVELS.to_vec()
            } else {
                DEFAULT_LEVELS.to_vec()
            },
            rates: (!self.side_by_side_rates.is_empty()).then(|| self.side_by_side_rates.clone()),
            // --quick keeps the fewest rounds worth an interval: with seven runtimes they do not
            // rotate through every place, so its generators share one schedule (less precise,
            // not biased).
            rounds: self.rounds.unwrap_or_else(|| {
                if self.quick {
                    crate::settings::MIN_ROUNDS
                } else {
                    crate::settings::balanced_rounds(runtimes)
                }
            }),
            windows: self.windows.unwrap_or(crate::side::DEFAULT_WINDOWS),
            count_s: self.count_seconds.unwrap_or(crate::side::DEFAULT_COUNT_S),
            budget,
            instructions: self.instructions,
            ..crate::side::SideSettings::default()
        })
    }

    /// The `--handicap NAME=US` flags, checked against the runtimes compared.
    fn handicaps(
        &self,
        runtimes: &[String],
    ) -> anyhow::Result<std::collections::BTreeMap<String, f64>> {
        let mut out = std::collections::BTreeMap::new();
        for text in &self.handicaps {
            let (name, us) = text.split_once('=').with_context(|| {
                format!("--handicap {text:?}: expected NAME=US, e.g. hyper#2=5")
            })?;
            let us: f64 = us
                .trim()
                .parse()
                .ok()
                .filter(|us: &f64| us.is_finite() && *us >= 0.0 && *us <= 1_000_000.0)
                .with_context(|| format!("--handicap {text:?}: {us:?} is not a number of µs"))?;
            let name = name.trim();
            if !runtimes.iter().any(|r| r == name) {
                bail!(
                    "--handicap {text:?}: {name} is not among the runtimes compared ({})",
                    runtimes.join(", ")
                );
            }
            out.insert(name.to_owned(), us);
        }
        Ok(out)
    }

    /// Resolves defaults (and `--quick`) into settings; `registry` holds the scenarios known by
    /// name and those run by default.
    pub fn settings(&self, registry: &Registry) -> anyhow::Result<CompareSettings> {
        let (launch, server_info, mut external) = self.servers()?;
        let mut setup_notes = self.setup_notes()?;
        let runtimes = self.runtime_names(&mut external, &server_info)?;
        let runtimes = self.offering_h3(
            runtimes,
            &server_info,
            external.is_empty(),
            &mut setup_notes,
        )?;
        let handicaps = self.handicaps(&runtimes)?;
        if !handicaps.is_empty() && !external.is_empty() {
            bail!("--handicap needs servers compare starts; it cannot reach --external ones");
        }
        // Side by side reads every server's CPU in nanoseconds: an external runtime needs its
        // cgroups for that.
        let side = self.side(
            external.iter().any(|e| e.cgroups.is_empty()),
            runtimes.len(),
        )?;
        let rule = self.rule()?;
        let scenarios = self.scenario_names(registry)?;
        let users = self.user_counts();
        self.check_launch(&launch, &handicaps, runtimes.len(), &users)?;
        self.check_store(&launch, &server_info)?;
        let (duration, warmup) = self.run_times();
        let cpus = self.cpus.choice()?;
        self.check_mongodb_uri(external.is_empty())?;
        let preloads = self.preloads();
        if let Some(rate) = self.rate {
            brigade_load::engine::check_rate("--rate", rate)?;
        }
        let thresholds = brigade_load::threshold::parse_all(&self.thresholds)?;
        let slo = self.slo_plan()?;
        let (isolated, side) = self.what_runs(slo.is_some(), side);
        self.check_baseline()?;
        let wire = self.wire(&launch, !external.is_empty())?;
        let out_dir = self.out.clone().unwrap_or_else(default_out);
        Ok(CompareSettings {
            launch,
            server_info,
            registry: registry.clone(),
            runtimes,
            handicaps,
            store: self.store.clone(),
            mongodb_uri: self.mongodb_uri.clone(),
            scenarios,
            users,
            preloads,
            duration,
            warmup,
            repeat: self.repeat.unwrap_or(DEFAULT_REPEAT),
            isolated,
            side,
            workers: self.workers,
            threads: self.threads,
            timeout: self.timeout,
            rule,
            cpus,
            out_dir,
            quick: self.quick,
            progress: !self.no_progress && std::io::IsTerminal::is_terminal(&std::io::stderr()),
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            keepalive: !self.no_keepalive,
            wire,
            rate: self.rate,
            seed: self.seed.unwrap_or_else(|| fastrand::u64(..)),
            thresholds,
            baseline: self.baseline.clone(),
            external,
            setup_notes,
            slo,
        })
    }

    /// The servers flags (`--external*`, `--binary`, `--server-command`): how servers start, what
    /// the binary says of itself, and the external runtimes (none when compare starts them).
    fn servers(
        &self,
    ) -> anyhow::Result<(
        Launch,
        ServerInfo,
        Vec<crate::servers::external::ExternalRuntime>,
    )> {
        let specs = self
            .external
            .iter()
            .map(|text| ExternalSpec::parse(text))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut external = crate::servers::external::group(&specs)?;
        crate::servers::external::add_companions(&mut external, &self.external_companions)?;
        crate::servers::external::add_cgroups(&mut external, &self.external_cgroups)?;
        let (launch, server_info) = if external.is_empty() {
            Launch::resolve(
                self.binary.as_deref(),
                self.server_command.as_deref(),
                !self.runtimes.is_empty(),
            )?
        } else {
            // Nothing is started: the binary is neither asked nor run.
            (
                Launch::Binary(PathBuf::from("(external servers)")),
                ServerInfo::default(),
            )
        };
        Ok((launch, server_info, external))
    }

    /// The runtimes compared (`--runtimes`, else every external one, else every one the binary
    /// has); with external servers, `--runtimes` picks and orders among them.
    fn runtime_names(
        &self,
        external: &mut Vec<crate::servers::external::ExternalRuntime>,
        server_info: &ServerInfo,
    ) -> anyhow::Result<Vec<String>> {
        Ok(if !external.is_empty() {
            if self.runtimes.is_empty() {
                external.iter().map(|e| e.runtime.clone()).collect()
            } else {
                // --runtimes picks (and orders) among the external runtimes.
                for runtime in &self.runtimes {
                    if !external.iter().any(|e| &e.runtime == runtime) {
                        bail!("--runtimes names {runtime}, which no --external gives a URL for");
                    }
                }
                external.retain(|e| self.runtimes.contains(&e.runtime));
                self.runtimes.clone()
            }
        } else {
            crate::settings::label_runtimes(&server_info.pick_runtimes(&self.runtimes))
        })
    }

    /// Over h3 (compare's servers): the runtimes that offer it, the others left out and said so in
    /// a setup note (an h3 comparison of actix-web would not be one: it refuses h3 at start).
    fn offering_h3(
        &self,
        runtimes: Vec<String>,
        server_info: &ServerInfo,
        started_here: bool,
        notes: &mut Vec<(String, String)>,
    ) -> anyhow::Result<Vec<String>> {
        if self.protocols.as_slice() != [Protocol::H3] || !started_here {
            return Ok(runtimes);
        }
        let offers =
            |label: &String| server_info.offers(crate::settings::runtime_of(label), Protocol::H3);
        let (kept, left): (Vec<String>, Vec<String>) = runtimes.into_iter().partition(offers);
        if kept.is_empty() {
            bail!(
                "--protocols h3: none of the runtimes compared offers h3 ({}): the binary's \
                 `runtimes --json` names those that do",
                left.join(", ")
            );
        }
        let stacks: Vec<String> = server_info
            .runtimes
            .iter()
            .filter(|r| {
                kept.iter()
                    .any(|k| crate::settings::runtime_of(k) == r.name)
            })
            .filter_map(|r| r.h3.as_ref().map(|s| format!("{} on {s}", r.name)))
            .collect();
        notes.push((
            "HTTP/3".to_owned(),
            format!("served by {}", stacks.join("; ")),
        ));
        if !left.is_empty() {
            notes.push((
                "Left out of h3".to_owned(),
                format!("{} (h3 not offered by this runtime)", left.join(", ")),
            ));
        }
        Ok(kept)
    }

    /// `--setup-note LABEL=TEXT`, in the order given.
    fn setup_notes(&self) -> anyhow::Result<Vec<(String, String)>> {
        self.setup_notes
            .iter()
            .map(|text| {
                text.split_once('=')
                    .map(|(label, line)| (label.trim().to_owned(), line.trim().to_owned()))
                    .with_context(|| format!("--setup-note {text:?}: expected LABEL=TEXT"))
            })
            .collect::<anyhow::Result<Vec<_>>>()
    }

    /// `--scenarios`, else every scenario the binary registered to compare by default.
    fn scenario_names(&self, registry: &Registry) -> anyhow::Result<Vec<String>> {
        Ok(if self.scenarios.is_empty() {
            let registered = registry.application_names();
            if registered.is_empty() {
                bail!(
                    "this binary registers no scenario to compare by default: give --scenarios \
                     (a scenario file, or one of: {})",
                    registry.names().join(", ")
                );
            }
            registered.into_iter().map(str::to_owned).collect()
        } else {
            self.scenarios.clone()
        })
    }

    /// `--users`, else the default (or `--quick`) user counts.
    fn user_counts(&self) -> Vec<u32> {
        if self.users.is_empty() {
            let default = if self.quick {
                QUICK_USERS
            } else {
                DEFAULT_USERS
            };
            default
                .split(',')
                .map(|u| u.parse().expect("a valid default"))
                .collect()
        } else {
            self.users.clone()
        }
    }

    /// Whether the servers can be started as asked: the store and preload they need, a
    /// `{handicap_us}` in the server command for `--handicap`, at least one user.
    fn check_launch(
        &self,
        launch: &Launch,
        handicaps: &std::collections::BTreeMap<String, f64>,
        runtimes: usize,
        users: &[u32],
    ) -> anyhow::Result<()> {
        launch.check(&self.store, self.preload.iter().any(|&n| n > 0), runtimes)?;
        if !handicaps.is_empty() && !launch.passes("handicap_us") {
            bail!(
                "--server-command has no {{handicap_us}}, so --handicap cannot reach the server: \
                 add `--handicap-us {{handicap_us}}` to it"
            );
        }
        if users.contains(&0) {
            bail!("--users must be at least 1");
        }
        Ok(())
    }

    /// Refuses a store the server binary does not have: its stores are its registry's (`runtimes
    /// --json`); a binary that did not say (external servers, one that could not be asked) is
    /// taken at its word.
    fn check_store(&self, launch: &Launch, server_info: &ServerInfo) -> anyhow::Result<()> {
        if !server_info.stores.is_empty() && !server_info.stores.contains(&self.store) {
            bail!(
                "store {} is not compiled into {} (it has: {})",
                self.store,
                launch.binary().display(),
                server_info.stores.join(", ")
            );
        }
        Ok(())
    }

    /// `--duration` and `--warmup`, else their defaults (or `--quick`'s).
    fn run_times(&self) -> (Duration, Duration) {
        let parse_duration = |text: &str| humantime::parse_duration(text).expect("a valid default");
        let duration = self.duration.unwrap_or_else(|| {
            parse_duration(if self.quick {
                QUICK_DURATION
            } else {
                DEFAULT_DURATION
            })
        });
        let warmup = self.warmup.unwrap_or_else(|| {
            parse_duration(if self.quick {
                QUICK_WARMUP
            } else {
                DEFAULT_WARMUP
            })
        });
        (duration, warmup)
    }

    /// Refuses a `--mongodb-uri` that names a database when compare starts the servers.
    fn check_mongodb_uri(&self, starts_servers: bool) -> anyhow::Result<()> {
        if self.store == "mongo" && starts_servers {
            if let Some(database) = self.mongodb_uri.as_deref().and_then(uri_database) {
                bail!(
                    "the MongoDB URI names the database {database:?}: every run would share it; \
                     give the URI without a database (compare gives each run fresh databases)"
                );
            }
        }
        Ok(())
    }

    /// `--preload`, each count once in the order given (none: 0).
    fn preloads(&self) -> Vec<u64> {
        let mut preloads = if self.preload.is_empty() {
            vec![0]
        } else {
            self.preload.clone()
        };
        let mut seen = std::collections::BTreeSet::new();
        preloads.retain(|n| seen.insert(*n));
        preloads
    }

    /// Whether the runs alone and side by side happen: an `--slo` search replaces them unless
    /// `--slo-also-compare`.
    fn what_runs(
        &self,
        slo: bool,
        side: crate::side::SideSettings,
    ) -> (bool, crate::side::SideSettings) {
        if slo && !self.slo_also_compare {
            (
                false,
                crate::side::SideSettings {
                    enabled: false,
                    instructions: false,
                    ..side
                },
            )
        } else {
            (!self.no_isolated, side)
        }
    }

    /// Reads `--baseline` now: a typo should not cost a whole comparison.
    fn check_baseline(&self) -> anyhow::Result<()> {
        if let Some(path) = &self.baseline {
            crate::baseline::read(path)
                .with_context(|| format!("--baseline {}", path.display()))?;
        }
        Ok(())
    }

    /// What this one comparison speaks: its one `--protocols` entry (h1 when none), `--streams`;
    /// a protocol other than h1 needs servers compare starts with the standard flags, which it
    /// gives the serve flags that protocol needs.
    fn wire(&self, launch: &Launch, external: bool) -> anyhow::Result<Wire> {
        let protocol = match self.protocols.as_slice() {
            [] => Protocol::H1,
            [one] => *one,
            _ => bail!("--protocols with several protocols runs one comparison per protocol"),
        };
        if protocol != Protocol::H1 {
            if external {
                bail!(
                    "--protocols {protocol} needs servers compare starts: it cannot tell --external \
                     ones which protocol to speak"
                );
            }
            if matches!(launch, Launch::Template { .. }) {
                bail!(
                    "--protocols {protocol} needs the standard serve flags, to which compare adds {}: \
                     drop --server-command",
                    crate::servers::launch::serve_protocol_args(protocol).join(" ")
                );
            }
        }
        Ok(Wire::new(protocol, self.streams))
    }

    /// The `--slo` search's plan, checked; `None` without `--slo`.
    fn slo_plan(&self) -> anyhow::Result<Option<crate::settings::SloPlan>> {
        if self.slo.slo.is_empty() {
            return Ok(None);
        }
        if self.rate.is_some() {
            bail!("--slo sets the rates itself: drop --rate (the search starts from --slo-start)");
        }
        let slos = self.slo.slos()?;
        // Checked now, with any start: a typo should not wait for the first search.
        let search = self.slo.settings(self.slo.slo_start.unwrap_or(1.0))?;
        Ok(Some(crate::settings::SloPlan {
            slos,
            args: self.slo.clone(),
            search,
        }))
    }
}

/// The database a MongoDB URI names (`mongodb://host/db?...` → `db`), if any.
fn uri_database(uri: &str) -> Option<&str> {
    let rest = uri.split_once("://")?.1;
    let path = rest.split('?').next()?.split_once('/')?.1;
    (!path.is_empty()).then_some(path)
}

/// Where a comparison writes when `--out` is not given: `results/compare-<UTC time>`.
fn default_out() -> PathBuf {
    PathBuf::from("results").join(format!("compare-{}", crate::clock::stamp()))
}

/// What serves `store`, in words (the MongoDB server asked for its name, where the binary can).
fn store_server(store: &str, args: &CompareArgs) -> String {
    match store {
        "memory" => "in each service's process, nothing kept".to_owned(),
        "embedded" => "redb, one file per service on the local disk".to_owned(),
        "mongo" => match (args.describe_mongo, args.mongodb_uri.as_deref()) {
            (None, _) => "MongoDB (this build cannot ask which)".to_owned(),
            (Some(_), None) => "MongoDB (no URI given)".to_owned(),
            (Some(describe), Some(uri)) => describe(uri).unwrap_or_else(|e| {
                format!("a MongoDB server that did not say what it is ({e:#})")
            }),
        },
        other => other.to_owned(),
    }
}

impl CompareArgs {
    /// `--stores`: the arguments of each store's whole comparison, its reports under `out`.
    fn per_store(&self, out: &std::path::Path) -> Vec<(String, CompareArgs)> {
        self.stores
            .iter()
            .map(|store| {
                let one = CompareArgs {
                    store: store.clone(),
                    stores: Vec::new(),
                    out: Some(crate::stores::folder(out, store)),
                    ..self.clone()
                };
                (store.clone(), one)
            })
            .collect()
    }

    /// Several `--protocols`: the arguments of each protocol's whole comparison (each protocol
    /// once), its reports under `out`.
    fn per_protocol(&self, out: &std::path::Path) -> Vec<(Protocol, CompareArgs)> {
        let mut seen = std::collections::HashSet::new();
        self.protocols
            .iter()
            .filter(|p| seen.insert(**p))
            .map(|&protocol| {
                let one = CompareArgs {
                    protocols: vec![protocol],
                    out: Some(crate::protocols::folder(out, protocol)),
                    ..self.clone()
                };
                (protocol, one)
            })
            .collect()
    }
}

/// `compare --stores`: a whole comparison per store, then the stores report over them.
fn run_stores(args: &CompareArgs, registry: &Registry) -> anyhow::Result<()> {
    let began = std::time::Instant::now();
    let started_at = crate::clock::now_rfc3339();
    let out = args.out.clone().unwrap_or_else(default_out);
    let mut settings_by_store = Vec::new();
    for (store, one) in args.per_store(&out) {
        // Every store's settings checked before the first run: a typo should cost nothing.
        settings_by_store.push((store, one.settings(registry)?));
    }
    let mut runs = Vec::new();
    for (i, (store, settings)) in settings_by_store.iter().enumerate() {
        let report = run_one(settings, "store", store, (i, settings_by_store.len()))?;
        let run = crate::stores::StoreRun {
            store: store.clone(),
            server: store_server(store, args),
            folder: format!("store-{store}"),
        };
        runs.push((run, report));
    }
    let mut setup = dimension_setup(&settings_by_store[0].1);
    setup.line(
        "Stores",
        runs.iter()
            .map(|(r, _)| format!("{} ({}; its report in {}/)", r.store, r.server, r.folder))
            .collect::<Vec<_>>()
            .join("; "),
    );
    let report = crate::stores::report(&runs, setup, started_at, began.elapsed().as_secs_f64());
    write_dimension_report(&report, &out, "store")
}

/// `compare --protocols` with several: a whole comparison per protocol, then the protocols
/// report over them.
fn run_protocols(args: &CompareArgs, registry: &Registry) -> anyhow::Result<()> {
    let began = std::time::Instant::now();
    let started_at = crate::clock::now_rfc3339();
    let out = args.out.clone().unwrap_or_else(default_out);
    let mut settings_by_protocol = Vec::new();
    for (protocol, one) in args.per_protocol(&out) {
        // Every protocol's settings checked before the first run: a typo should cost nothing.
        settings_by_protocol.push((protocol, one.settings(registry)?));
    }
    let mut runs = Vec::new();
    for (i, (protocol, settings)) in settings_by_protocol.iter().enumerate() {
        let report = run_one(
            settings,
            "protocol",
            protocol.name(),
            (i, settings_by_protocol.len()),
        )?;
        runs.push((crate::protocols::run_of(*protocol), report));
    }
    let first = &settings_by_protocol[0].1;
    let mut setup = dimension_setup(first);
    setup.line("Store", first.store.clone()).line(
        "Protocols",
        runs.iter()
            .map(|(r, report)| {
                format!(
                    "{} ({}; its report in {}/)",
                    r.protocol,
                    serve_words(r.protocol, report.settings.streams),
                    r.folder
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
    );
    let report = crate::protocols::report(&runs, setup, started_at, began.elapsed().as_secs_f64());
    write_dimension_report(&report, &out, "protocol")
}

/// How a protocol's servers were started and loaded, in words.
fn serve_words(protocol: Protocol, streams: u32) -> String {
    let flags = crate::servers::launch::serve_protocol_args(protocol).join(" ");
    let serve = if flags.is_empty() {
        "servers with the standard flags".to_owned()
    } else {
        format!("servers with `{flags}`")
    };
    format!(
        "{serve}, loads over {}",
        Wire::new(protocol, streams).describe()
    )
}

/// One comparison of a dimension (`store`, `protocol`), `i` of `n`, with its summary printed.
fn run_one(
    settings: &CompareSettings,
    dimension: &str,
    value: &str,
    (i, n): (usize, usize),
) -> anyhow::Result<crate::report::Report> {
    println!("\n== {dimension} {} of {n}: {value} ==", i + 1);
    let report = crate::run(settings)?;
    println!("\n{}", markdown::summary(&report));
    Ok(report)
}

/// The setup section of a report over a dimension: what every comparison shared.
fn dimension_setup(first: &CompareSettings) -> crate::report::setup::Setup {
    let mut setup = crate::report::setup::Setup {
        machine: brigade_load::machine::describe(),
        versions: crate::report::setup::build_versions(),
        lines: Vec::new(),
        command_line: first.command_line.clone(),
    };
    setup
        .line("Runtimes", first.runtimes.join(", "))
        .line("Scenarios", first.scenarios.join(", "))
        .line(
            "Users",
            first
                .users
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        );
    setup
}

/// Writes a dimension's report at `out` and says where.
fn write_dimension_report(
    report: &crate::report::study::StudyReport,
    out: &std::path::Path,
    dimension: &str,
) -> anyhow::Result<()> {
    crate::report::write_all(report, out)?;
    println!("\n{}", report.summary);
    println!(
        "Reports: {} (report.md, report.json, report.html; one folder per {dimension})",
        out.display()
    );
    Ok(())
}

/// `compare --plan`: every comparison's checked plan as JSON, nothing run.
fn print_plans(args: &CompareArgs, registry: &Registry) -> anyhow::Result<()> {
    let out = args.out.clone().unwrap_or_else(default_out);
    let ones: Vec<CompareArgs> = if !args.stores.is_empty() {
        args.per_store(&out)
            .into_iter()
            .map(|(_, one)| one)
            .collect()
    } else if args.protocols.len() > 1 {
        args.per_protocol(&out)
            .into_iter()
            .map(|(_, one)| one)
            .collect()
    } else {
        vec![args.clone()]
    };
    let mut plans = Vec::new();
    for one in &ones {
        let settings = one.settings(registry)?;
        plans.push(crate::plan::Plan::check(&settings)?.to_json());
    }
    let json = if plans.len() == 1 {
        plans.remove(0)
    } else {
        serde_json::json!({ "comparisons": plans })
    };
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}

/// Runs `brigade compare` with the scenarios in `registry`: the comparison, the three reports, and
/// the summary on the terminal.
pub fn run_compare(args: CompareArgs, registry: &Registry) -> anyhow::Result<()> {
    if !args.stores.is_empty() && args.protocols.len() > 1 {
        bail!(
            "--stores and --protocols are both dimensions of whole comparisons: give one of them \
             (one store over several protocols: `--store S --protocols ...`)"
        );
    }
    if args.plan {
        return print_plans(&args, registry);
    }
    if !args.stores.is_empty() {
        return run_stores(&args, registry);
    }
    if args.protocols.len() > 1 {
        return run_protocols(&args, registry);
    }
    if let Some(dir) = &args.rejudge {
        let report = crate::rejudge(dir, &args.rule()?)?;
        println!("{}", markdown::summary(&report));
        println!(
            "Rewrote {} (report.md, report.json, report.html)",
            dir.display()
        );
        return Ok(());
    }
    let settings = args.settings(registry)?;
    let report = crate::run(&settings)?;
    println!("\n{}", markdown::summary(&report));
    println!(
        "Reports: {} (report.md, report.json, report.html)",
        settings.out_dir.display()
    );
    let failed = crate::thresholds::failures(&report.threshold_checks);
    if !failed.is_empty() {
        bail!(
            "{} of {} threshold check(s) failed: {}",
            failed.len(),
            report.threshold_checks.len(),
            failed
                .iter()
                .map(|c| c.sentence())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `compare` with `args`, parsed as the binary parses them.
    fn parse(args: &[&str]) -> CompareArgs {
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            compare: CompareArgs,
        }
        let words = std::iter::once("compare").chain(args.iter().copied());
        <Command as clap::Parser>::parse_from(words).compare
    }

    #[test]
    fn one_protocol_is_one_comparison_over_it_with_its_streams() {
        let binary = Launch::Binary("brigade".into());
        assert_eq!(parse(&[]).wire(&binary, false).unwrap(), Wire::default());
        let wire = parse(&["--protocols", "h2-tls", "--streams", "4"])
            .wire(&binary, false)
            .unwrap();
        assert_eq!(wire, Wire::new(Protocol::H2Tls, 4));
        let template = Launch::Template {
            binary: "brigade".into(),
            template: crate::servers::CommandTemplate::parse("srv --listen {listen}").unwrap(),
        };
        let h2c = parse(&["--protocols", "h2c"]);
        let refused = h2c.wire(&template, false).unwrap_err().to_string();
        assert!(refused.contains("--protocol h2c"), "{refused}");
        let refused = h2c.wire(&binary, true).unwrap_err().to_string();
        assert!(refused.contains("--external"), "{refused}");
        // Plaintext HTTP/1.1 is what every server speaks unasked: a template or external is fine.
        assert!(parse(&["--protocols", "h1"]).wire(&template, true).is_ok());
    }

    #[test]
    fn over_h3_only_the_runtimes_that_offer_it_are_compared_and_the_others_named() {
        let info = ServerInfo {
            runtimes: ["quic-a", "tcp-only", "quic-b"]
                .iter()
                .map(|name| crate::servers::info::RuntimeInfo {
                    name: (*name).to_owned(),
                    h3: (*name != "tcp-only").then(|| "h3 0.0.8".to_owned()),
                    ..Default::default()
                })
                .collect(),
            ..ServerInfo::default()
        };
        let all: Vec<String> = ["quic-a", "tcp-only", "quic-b", "quic-b#2"]
            .map(String::from)
            .into();
        let mut notes = Vec::new();
        let h3 = parse(&["--protocols", "h3"]);
        let kept = h3
            .offering_h3(all.clone(), &info, true, &mut notes)
            .unwrap();
        assert_eq!(kept, ["quic-a", "quic-b", "quic-b#2"]);
        assert_eq!(notes[0].0, "HTTP/3");
        assert!(notes[0].1.contains("quic-a on h3 0.0.8"), "{notes:?}");
        assert_eq!(
            notes[1],
            (
                "Left out of h3".to_owned(),
                "tcp-only (h3 not offered by this runtime)".to_owned()
            )
        );
        let h2 = parse(&["--protocols", "h2-tls"]);
        assert_eq!(
            h2.offering_h3(all, &info, true, &mut notes).unwrap().len(),
            4
        );
        let tcp_only = vec!["tcp-only".to_owned()];
        assert!(h3.offering_h3(tcp_only, &info, true, &mut notes).is_err());
    }

    #[test]
    fn several_protocols_on_several_stores_are_refused_with_the_way_out() {
        let args = parse(&["--protocols", "h1,h2c", "--stores", "memory,embedded"]);
        let refused = run_compare(args, &Registry::new()).unwrap_err().to_string();
        assert!(refused.contains("--store S --protocols"), "{refused}");
    }

    #[test]
    fn a_uri_database_is_found_where_there_is_one() {
        assert_eq!(uri_database("mongodb://h:27017/shop?x=1"), Some("shop"));
        assert_eq!(uri_database("mongodb://h:27017/?x=1"), None);
        assert_eq!(uri_database("mongodb://u:p@h1,h2"), None);
    }

    #[test]
    fn the_mongo_server_is_described_by_the_binary_or_said_unknown() {
        let mut args = parse(&["--mongodb-uri", "mongodb://h:27017"]);
        assert!(store_server("mongo", &args).contains("cannot ask"));
        args.describe_mongo = Some(|uri| Ok(format!("MongoDB 7.0 at {uri}")));
        assert_eq!(
            store_server("mongo", &args),
            "MongoDB 7.0 at mongodb://h:27017"
        );
        args.describe_mongo = Some(|_| anyhow::bail!("refused"));
        assert!(store_server("mongo", &args).ends_with("did not say what it is (refused)"));
        args.mongodb_uri = None;
        assert_eq!(store_server("mongo", &args), "MongoDB (no URI given)");
    }
}
