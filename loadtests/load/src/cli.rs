//! The command line `brigade load` delegates to: its clap `Args` struct, the function that runs it,
//! and the parsers of its values (durations, CPU lists, targets). A binary mounts it as a subcommand
//! and hands it the [`Registry`] of the scenarios and default targets it knows.
//!
//! Protocols: `--protocol h1|h2c|h1-tls|h2-tls` (default `h1`); without `--protocol`, a run whose
//! targets include an `https://` URL speaks `h1-tls` (HTTP/1.1 over TLS, the protocol every
//! HTTPS server speaks); an `https://` target with an explicit plaintext protocol is an error.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::engine::{self, LoadConfig};
use crate::registry::Registry;
use crate::scenario::DEFAULT_SERVICE;
use crate::threshold;

/// `brigade load`: run one scenario against running services and report what it measured.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Scenarios: a registered name (--list-scenarios) or a TOML file (see docs/methodology.md).\n\
Examples:\n  brigade load --target http://127.0.0.1:8081 --scenario hello --users 50 --duration 30s\n  \
brigade load --scenario my-mix.toml --target api=http://127.0.0.1:8080 --rate 2000 --connections 64 --duration 1m --json run.json\n\
Many generators, one run (docs/scaling.md):\n  \
brigade load --scenario all --setup-only --fixtures fx.json\n  \
brigade load --scenario all --fixtures fx.json --users 90 --shard 0/3 --start-at 2026-11-30T18:00:00Z --json s0.json   (and 1/3, 2/3)\n  \
brigade merge s0.json s1.json s2.json --json run.json"
)]
pub struct LoadArgs {
    /// Target base URL: `URL` for every service the scenario uses, or `NAME=URL` (repeatable; a
    /// scenario naming no service goes to the first). Default: the targets the binary registered
    /// (--list-scenarios shows them).
    #[arg(long = "target", value_name = "[NAME=]URL")]
    pub targets: Vec<String>,
    /// A registered scenario's name or the path to a scenario TOML file.
    #[arg(long, default_value = "hello", value_name = "NAME|FILE")]
    pub scenario: String,
    /// Closed loop: this many users, each sending its next request when the last one is answered
    /// (default 10). With `--rate`: the number of connections, unless `--connections` is given.
    #[arg(long, short = 'u')]
    pub users: Option<u32>,
    /// Open loop: requests per second on a fixed schedule, latency from the intended send time.
    #[arg(long, short = 'r')]
    pub rate: Option<f64>,
    /// Open loop: connections sending the schedule (default: --users, else 10).
    #[arg(long, short = 'c')]
    pub connections: Option<u32>,
    /// Measured time after warm-up (`30s`, `2m`, `500ms`); default 10s unless --requests is given.
    #[arg(long, short = 'd', value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Measured requests after warm-up (with --duration too, whichever comes first).
    #[arg(long, short = 'n')]
    pub requests: Option<u64>,
    /// Load sent before measuring, not counted.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Open a new connection for every request (`Connection: close`).
    #[arg(long)]
    pub no_keepalive: bool,
    /// Generator threads, each a single-threaded runtime (default: one per usable CPU).
    #[arg(long, short = 't')]
    pub threads: Option<u32>,
    /// Per-request timeout, connection included.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Closed loop: pause between an answer and the user's next request.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub think: Duration,
    /// Pin the generator's threads to these CPUs (`1`, `2-3`, `0,2,4`).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Also write the full result (with the latency histograms) as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress bar (it is never drawn when stderr is not a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
    /// List the registered scenarios and default targets, and exit.
    #[arg(long)]
    pub list_scenarios: bool,
    /// Seed every random choice (the mix, template values) from this number: two runs with one
    /// seed send each user the same requests in the same order [default: a random seed, printed
    /// and written in the result]
    #[arg(long)]
    pub seed: Option<u64>,
    /// A pass/fail threshold on the run's totals, e.g. `p99<5ms`, `errors<0.1%`, `hits/s>1000`
    /// (repeatable; metrics mean, p50, p90, p99, p99.9, max, errors, hits/s, requests): the
    /// command exits non-zero when one fails and says which
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// Run shard I of N of this run: a block of its users (closed loop), every N-th of its paced
    /// connections with their place in the rate's schedule (open loop), and its share of
    /// --requests; `{{seq}}` numbers and the fixtures a scenario takes are kept apart between
    /// shards. Give every shard the same load flags and --seed; `brigade merge` adds them up
    #[arg(long, value_name = "I/N")]
    pub shard: Option<crate::shard::Shard>,
    /// Start (the warm-up) at this wall-clock time, an RFC 3339 time or UNIX seconds, so shards on
    /// several machines start together (fails if the time has passed)
    #[arg(long, value_name = "TIME", value_parser = crate::shard::parse_start_at)]
    pub start_at: Option<std::time::SystemTime>,
    /// The scenario's fixtures: with --setup-only, where to write them; else read them from this
    /// file instead of sending the setup steps (needed by shards of a scenario with setup steps)
    #[arg(long, value_name = "FILE")]
    pub fixtures: Option<PathBuf>,
    /// Send the scenario's setup steps once, write the fixtures they made to --fixtures, and exit
    #[arg(long, requires = "fixtures")]
    pub setup_only: bool,
    /// The wire protocol: h1 (plaintext HTTP/1.1), h2c (plaintext HTTP/2, prior knowledge),
    /// h1-tls or h2-tls (over TLS, ALPN offering only http/1.1 resp. h2) [default: h1, or h1-tls
    /// when a target is https://]
    #[arg(long, value_name = "h1|h2c|h1-tls|h2-tls")]
    pub protocol: Option<engine::Protocol>,
    /// HTTP/2: requests in flight per connection (closed loop: per user; open loop: the schedule
    /// is spread over connections × streams senders)
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub streams: u32,
    /// TLS: accept any server certificate (self-signed servers)
    #[arg(long)]
    pub tls_insecure: bool,
    /// TLS: no session resumption, a full handshake on every connection
    #[arg(long)]
    pub no_tls_resumption: bool,
    /// TLS: trust the certificates in this PEM file instead of the web's roots
    #[arg(long, value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,
    /// TLS: present this client certificate chain (PEM; mutual TLS, with --tls-client-key)
    #[arg(long, value_name = "PEM", requires = "tls_client_key")]
    pub tls_client_cert: Option<PathBuf>,
    /// TLS: the client certificate's private key (PEM)
    #[arg(long, value_name = "PEM", requires = "tls_client_cert")]
    pub tls_client_key: Option<PathBuf>,
    /// Capacity at an SLO: with `--slo`, the rates are the search's own (`--rate` is refused);
    /// each step is a `--warmup` and a `--duration` window (default 2s) on `--connections`
    #[command(flatten)]
    pub slo: crate::slo::SloArgs,
}

/// `brigade merge`: one result from the results of generators that ran at the same time.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Histograms are merged exactly, counts summed, rates taken over the common window \
(first start to last end). Example:\n  brigade merge s0.json s1.json s2.json --json run.json"
)]
pub struct MergeArgs {
    /// Results written by `brigade load --json`, usually its shards (`--shard I/N`).
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
    /// Write the merged result as JSON to this file (the format `brigade load --json` writes).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// A pass/fail threshold on the merged totals, as for `brigade load` (repeatable).
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
}

impl LoadArgs {
    /// The engine configuration these arguments describe; `registry` gives the default targets.
    pub fn config(&self, registry: &Registry) -> Result<LoadConfig> {
        let defaults = LoadConfig::default();
        if let Some(rate) = self.rate {
            engine::check_rate("--rate", rate)?;
        }
        let targets = if self.targets.is_empty() {
            registry.targets()
        } else {
            parse_targets(&self.targets)?
        };
        let protocol = self.protocol.unwrap_or(if targets_https(&targets) {
            engine::Protocol::H1Tls
        } else {
            engine::Protocol::H1
        });
        let connections = self.connections.or(if self.rate.is_some() {
            self.users
        } else {
            None
        });
        Ok(LoadConfig {
            targets,
            users: if self.rate.is_some() {
                None
            } else {
                Some(self.users.unwrap_or(10))
            },
            rate: self.rate,
            connections: connections.unwrap_or(defaults.connections),
            duration: match (self.duration, self.requests) {
                (None, None) => defaults.duration,
                (d, _) => d,
            },
            requests: self.requests,
            warmup: self.warmup,
            keepalive: !self.no_keepalive,
            threads: self.threads.unwrap_or(0),
            timeout: self.timeout,
            think: self.think,
            cpus: self.cpus.as_deref().map(parse_cpu_list).transpose()?,
            progress: !self.no_progress,
            seed: self.seed,
            protocol,
            streams: self.streams,
            tls: engine::TlsClient {
                insecure: self.tls_insecure,
                resumption: !self.no_tls_resumption,
                ca: self.tls_ca.clone(),
                client_cert: self.tls_client_cert.clone(),
                client_key: self.tls_client_key.clone(),
            },
        })
    }
}

/// Whether any target is an `https://` URL.
fn targets_https(targets: &BTreeMap<String, String>) -> bool {
    targets
        .values()
        .any(|url| url.trim().to_ascii_lowercase().starts_with("https://"))
}

/// Runs `brigade load` with the scenarios and default targets in `registry`: prints the table to
/// stdout and writes `--json` if asked.
pub fn run_load(args: LoadArgs, registry: &Registry) -> Result<()> {
    if args.list_scenarios {
        for name in registry.names() {
            let s = registry.get(name)?;
            println!(
                "{name:<11} {} (services: {})",
                s.description(),
                s.services().join(", ")
            );
        }
        for (service, url) in registry.default_targets() {
            println!("target {service}={url}");
        }
        return Ok(());
    }
    let thresholds = threshold::parse_all(&args.thresholds)?;
    let scenario = registry.load(&args.scenario)?;
    if !args.slo.slo.is_empty() {
        return crate::slo::load::run(&args, registry, &scenario);
    }
    let config = args.config(registry)?;
    if args.setup_only {
        let path = args.fixtures.as_ref().expect("clap requires --fixtures");
        let fixtures = engine::make_fixtures(&config, &scenario)?;
        fixtures.save(path)?;
        let counts: Vec<String> = fixtures
            .pools
            .iter()
            .map(|(name, values)| format!("{name} {}", values.len()))
            .collect();
        println!(
            "fixtures of {} written to {} ({}; {{{{seq}}}} used {})",
            scenario.name(),
            path.display(),
            if counts.is_empty() {
                "no pools".to_string()
            } else {
                counts.join(", ")
            },
            fixtures.seq_used
        );
        return Ok(());
    }
    if args.shard.is_some_and(|s| !s.is_whole()) && args.seed.is_none() {
        eprintln!(
            "note: a shard without --seed draws its own seed: give every shard one --seed so the merged run can be replayed"
        );
    }
    let plan = crate::shard::ShardPlan {
        shard: args.shard.unwrap_or_default(),
        start_at: args.start_at,
        fixtures: args
            .fixtures
            .as_deref()
            .map(crate::shard::Fixtures::load)
            .transpose()?,
    };
    let result = engine::run_shard(&config, &scenario, &plan)?;
    report(&result, args.json.as_deref(), &thresholds)
}

/// Runs `brigade merge`: reads the results, merges them as concurrent parts of one run, prints
/// the table `brigade load` prints and writes `--json` if asked.
pub fn run_merge(args: MergeArgs) -> Result<()> {
    let thresholds = threshold::parse_all(&args.thresholds)?;
    let mut results = Vec::new();
    for path in &args.results {
        let text = crate::files::read_text(path, crate::files::MAX_REPORT_BYTES, "result")?;
        let result: crate::result::LoadResult = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a brigade load result", path.display()))?;
        results.push(result);
    }
    let merged = crate::result::merge_shards(&results)?;
    for part in &merged.shards {
        let shard = part.shard.map_or("whole".to_string(), |s| s.to_string());
        println!(
            "part {shard:>5} on {}: {} requests, window {:.3}..{:.3} s (UNIX), generator CPU {:.0}%",
            part.hostname,
            part.requests,
            part.window.start_unix_s,
            part.window.end_unix_s,
            part.generator_cpu_percent
        );
    }
    if let Some(w) = merged.window {
        let overlap = merged
            .shards
            .iter()
            .map(|p| p.window.end_unix_s)
            .fold(f64::INFINITY, f64::min)
            - merged
                .shards
                .iter()
                .map(|p| p.window.start_unix_s)
                .fold(f64::NEG_INFINITY, f64::max);
        let span = w.end_unix_s - w.start_unix_s;
        println!(
            "common window {span:.3} s; the parts all ran together for {:.3} s",
            overlap.max(0.0)
        );
        if span > 0.0 && overlap < 0.9 * span {
            println!(
                "warning: the parts overlap for less than 90% of the common window: they did not start together (use --start-at) or some ended early, so the rates understate what they sent at once"
            );
        }
    }
    report(&merged, args.json.as_deref(), &thresholds)
}

/// Prints a result's table, writes it as JSON to `json` when asked, and checks `thresholds`
/// against its totals: an error names the ones that failed.
fn report(
    result: &crate::result::LoadResult,
    json: Option<&std::path::Path>,
    thresholds: &[threshold::Threshold],
) -> Result<()> {
    print!("{}", crate::table::render(result));
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(result)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("Failed to write {}", path.display()))?;
        println!("result written to {}", path.display());
    }
    let checks = threshold::check_all(thresholds, &(&result.total).into());
    for check in &checks {
        let mark = if check.passed { "ok  " } else { "FAIL" };
        println!("threshold {mark} {}: {}", check.threshold, check.text);
    }
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{} ({})", c.threshold, c.text))
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} of {} threshold(s) failed: {}",
            failed.len(),
            checks.len(),
            failed.join("; ")
        );
    }
    Ok(())
}

/// Turns `--target` values into service → URL: `URL` alone serves every service (`*`),
/// `NAME=URL` one service; without a `URL` alone, a scenario that names no service goes to the
/// first `NAME=URL`.
pub fn parse_targets(values: &[String]) -> Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    let mut first_named = None;
    for v in values {
        match v.split_once('=') {
            // A target for a service this scenario does not use is fine: one command line can
            // name all the services and run any scenario.
            Some((name, url)) if !name.contains("://") && !name.contains('/') => {
                map.insert(name.to_string(), url.to_string());
                first_named.get_or_insert_with(|| url.to_string());
            }
            _ => {
                if map.insert("*".to_string(), v.clone()).is_some() {
                    bail!("--target {v}: only one target may be given without a NAME=");
                }
            }
        }
    }
    if let Some(url) = first_named.filter(|_| !map.contains_key("*")) {
        map.entry(DEFAULT_SERVICE.to_string()).or_insert(url);
    }
    Ok(map)
}

/// Parses `1`, `2-3`, `0,2,4-5` into CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse()?, b.trim().parse()?);
                if a > b {
                    bail!("CPU range {part} runs backwards");
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(
                part.parse()
                    .with_context(|| format!("{part:?} is not a CPU number"))?,
            ),
        }
    }
    if cpus.is_empty() {
        bail!("no CPU in {text:?}");
    }
    Ok(cpus)
}

/// Parses `10s`, `2m`, `500ms`, `1m30s`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let parsed = match t.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => {
            Duration::try_from_secs_f64(secs).map_err(|e| format!("{text:?}: {e}"))?
        }
        _ => humantime::parse_duration(t)
            .map_err(|e| format!("{text:?} is not a duration (try 30s, 2m, 500ms): {e}"))?,
    };
    if parsed > MAX_DURATION {
        return Err(format!(
            "{text:?} is longer than any run here ({} days at most)",
            MAX_DURATION.as_secs() / 86_400
        ));
    }
    Ok(parsed)
}

/// A rate flag's value, requests per second, in the range [`crate::engine::check_rate`] allows.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of requests per second"))?;
    crate::engine::check_rate("rate", rate).map_err(|e| e.to_string())?;
    Ok(rate)
}

/// A percentage flag's value: more than 0, at most 100.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let pct: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a percentage"))?;
    if !(pct > 0.0 && pct <= 100.0) {
        return Err(format!(
            "{text:?}: a percentage here is more than 0 and at most 100"
        ));
    }
    Ok(pct)
}

/// The longest duration a flag takes: a year (a soak, a timeout); past it a value is a typo, and
/// adding it to a clock could overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 86_400);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_cpu_lists_and_targets_parse() {
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2.5").unwrap(), Duration::from_millis(2500));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("18446744073709551616").is_err());
        assert!(parse_duration("366days").is_err());
        assert_eq!(parse_cpu_list("0,2-4").unwrap(), vec![0, 2, 3, 4]);
        assert!(parse_cpu_list("3-1").is_err());

        let t = parse_targets(&["http://h:1".into(), "api=http://h:2".into()]).unwrap();
        assert_eq!(t["*"], "http://h:1");
        assert_eq!(t["api"], "http://h:2");
        // A service the scenario does not use may be named; two unnamed targets are ambiguous.
        let named = parse_targets(&["other=http://h:3".into(), "more=http://h:4".into()]).unwrap();
        assert_eq!(named["other"], "http://h:3");
        // A scenario naming no service goes to the first NAME=URL when no URL stands alone.
        assert_eq!(named[DEFAULT_SERVICE], "http://h:3");
        assert!(
            !t.contains_key(DEFAULT_SERVICE),
            "the unnamed URL serves it: {t:?}"
        );
        assert!(parse_targets(&["http://h:1".into(), "http://h:2".into()]).is_err());
        assert!(parse_targets(&[]).unwrap().is_empty());
    }

    #[test]
    fn without_a_target_the_registered_ones_are_used() {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct Cli {
            #[command(flatten)]
            load: LoadArgs,
        }
        let mut registry = Registry::new();
        registry
            .target("api", "http://h:1")
            .target("auth", "http://h:2");
        let args = Cli::parse_from(["load"]).load;
        let targets = args.config(&registry).unwrap().targets;
        assert_eq!(targets["api"], "http://h:1");
        assert_eq!(targets["auth"], "http://h:2");
        assert_eq!(targets[DEFAULT_SERVICE], "http://h:1");
        let args = Cli::parse_from(["load", "--target", "http://h:9"]).load;
        let targets = args.config(&registry).unwrap().targets;
        assert_eq!(targets.len(), 1, "{targets:?}");
    }

    #[test]
    fn protocol_and_tls_flags_make_the_config_and_https_means_h1_tls() {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct Cli {
            #[command(flatten)]
            load: LoadArgs,
        }
        let config = |argv: &[&str]| {
            let args = Cli::parse_from(["load"].iter().chain(argv)).load;
            args.config(&Registry::new()).unwrap()
        };
        let plain = config(&["--target", "http://h:1"]);
        assert_eq!((plain.protocol, plain.streams), (engine::Protocol::H1, 1));
        assert_eq!(plain.tls, engine::TlsClient::default());
        assert_eq!(
            config(&["--target", "https://h:1"]).protocol,
            engine::Protocol::H1Tls
        );
        let h2 = config(&[
            "--target",
            "https://h:1",
            "--protocol",
            "h2-tls",
            "--streams",
            "8",
            "--tls-insecure",
            "--no-tls-resumption",
            "--tls-ca",
            "ca.pem",
        ]);
        assert_eq!((h2.protocol, h2.streams), (engine::Protocol::H2Tls, 8));
        assert!(h2.tls.insecure && !h2.tls.resumption);
        assert_eq!(h2.tls.ca.as_deref(), Some(std::path::Path::new("ca.pem")));
        let refused = Cli::try_parse_from(["load", "--protocol", "h3"]);
        assert!(refused.is_err());
        let half = Cli::try_parse_from(["load", "--tls-client-cert", "c.pem"]);
        assert!(half.is_err(), "a client certificate needs its key");
    }
}
