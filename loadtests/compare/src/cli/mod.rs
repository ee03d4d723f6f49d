//! The `brigade compare` command line: its arguments, their defaults (the default run with every
//! runtime takes about 21 minutes on a 2-core machine and `--quick` about 3¼: README.md), and the
//! entry point. A binary mounts
//! it as a subcommand and hands it the [`Registry`] of the scenarios it knows; by default compare
//! runs those the binary registered.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use brigade_load::Registry;
use brigade_records::protocol::Protocol;
use clap::Args;

use brigade_meter::pin::CpuArgs;

use brigade_report::markdown;
use brigade_report::verdict;

/// User counts run by default (the study's).
pub(crate) const DEFAULT_USERS: &str = "10,20,30";
/// Measured time per run by default.
pub(crate) const DEFAULT_DURATION: &str = "1s";
/// Warm-up per run by default.
pub(crate) const DEFAULT_WARMUP: &str = "500ms";
/// Isolated runs per cell by default: one, since efficiency is judged side by side and throughput
/// from the run's seconds.
pub(crate) const DEFAULT_REPEAT: u32 = 1;
/// Extra time for undecided side-by-side levels by default.
pub(crate) const DEFAULT_BUDGET: &str = "1m";
/// Side-by-side load levels by default, shares of the server CPUs in total.
pub(crate) const DEFAULT_LEVELS: [f64; 2] = [0.4, 0.8];
/// `--quick`: one side-by-side load level.
pub(crate) const QUICK_LEVELS: [f64; 1] = [0.6];
/// `--quick`: user counts.
pub(crate) const QUICK_USERS: &str = "10";
/// `--quick`: measured time per run.
pub(crate) const QUICK_DURATION: &str = "1s";
/// `--quick`: warm-up per run.
pub(crate) const QUICK_WARMUP: &str = "500ms";

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
    /// 3¼ minutes with the eight default runtimes on 2 cores
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
    /// change against it, changed or within noise by the verdicts' paired rule. Repeatable: with
    /// two or more earlier runs each change is judged against their mean by how much they
    /// scattered (what a CI gate needs; one run cannot show its own run-to-run scatter)
    #[arg(long = "baseline", value_name = "FILE")]
    pub baselines: Vec<PathBuf>,
    /// With --baseline: exit non-zero when a runtime's cost rose against the baseline beyond the
    /// margin by the verdicts' rule (a decided change; naming the runtime, scenario and figure) —
    /// a regression gate for CI
    #[arg(long, requires = "baselines")]
    pub fail_on_regression: bool,
    /// A conformance study's report (its report.json, or the folder holding it) whose figures the
    /// report's "Correctness" section shows for these runtimes [default: the newest
    /// results/study-conformance-*]
    #[arg(long, value_name = "FILE", conflicts_with = "conformance")]
    pub conformance_report: Option<PathBuf>,
    /// Run the conformance study on the spot for these runtimes once the comparison is measured
    /// (`BINARY study conformance --quick`, about 10 s per runtime, into OUT/conformance/) and
    /// show it in the "Correctness" section
    #[arg(long)]
    pub conformance: bool,
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
    pub slo: brigade_load::args::SloArgs,
    /// With --slo: also make the isolated runs and side-by-side levels (their verdicts beside the
    /// capacity's; the search then starts from the isolated runs' rates)
    #[arg(long, requires = "slo")]
    pub slo_also_compare: bool,
    /// Run nothing: re-judge the report in DIR (its report.json) with the current rules,
    /// --equivalence and --confidence (and against --baseline, when given), and rewrite its
    /// report.json, report.md and report.html
    #[arg(long, value_name = "DIR")]
    pub rejudge: Option<PathBuf>,
    /// Run nothing: print the checked plan as JSON (the report's settings, the CPU split and
    /// threads, every isolated run and side-by-side cell, the time it expects); with --stores or
    /// several --protocols, one plan per comparison
    #[arg(long, conflicts_with = "rejudge")]
    pub plan: bool,
}

mod dimensions;
mod settings;

use dimensions::{print_plans, run_protocols, run_stores};

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
        let rule = args.rule()?;
        // Judged again, set against the baselines if any were given, then written once.
        let report = crate::judge::rejudged(dir, &rule)?;
        let report = crate::baseline::against(report, &args.baselines, &rule)?;
        brigade_report::write_all(&report, dir)?;
        println!("{}", markdown::summary(&report));
        println!(
            "Rewrote {} (report.md, report.json, report.html)",
            dir.display()
        );
        return gate(&args, &report);
    }
    let settings = args.settings(registry)?;
    let report = crate::run(&settings)?;
    println!("\n{}", markdown::summary(&report));
    println!(
        "Reports: {} (report.md, report.json, report.html)",
        settings.out_dir.display()
    );
    gate(&args, &report)
}

/// `--fail-on-regression` and `--threshold`: an error naming each regression or failed check.
fn gate(args: &CompareArgs, report: &brigade_report::Report) -> anyhow::Result<()> {
    if args.fail_on_regression {
        let regressions = report
            .baseline
            .as_ref()
            .map(crate::baseline::regressions)
            .unwrap_or_default();
        if !regressions.is_empty() {
            bail!(
                "{} regression(s) against the baseline: {}",
                regressions.len(),
                regressions.join("; ")
            );
        }
        println!("No regression against the baseline (--fail-on-regression).");
    }
    let failed = brigade_report::thresholds::failures(&report.threshold_checks);
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
