//! The clap arguments of `brigade load` and `brigade merge` and the engine configuration they
//! describe, and the SLO search's flags ([`SloArgs`], shared by `brigade load` and `brigade
//! compare`); `cli` runs the commands (`cli` → `args` → `parse`, never back).
//!
//! Protocols: `--protocol h1|h2c|h1-tls|h2-tls|h3` (default `h1`); without `--protocol`, a run whose
//! targets include an `https://` URL speaks `h1-tls` (HTTP/1.1 over TLS, the protocol every
//! HTTPS server speaks); an `https://` target with an explicit plaintext protocol is an error.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use brigade_records::threshold::{self, Threshold};
use brigade_slo::settings::{
    SearchSettings, DEFAULT_MAX_WINDOWS, DEFAULT_PRECISION, DEFAULT_SEARCHES, DEFAULT_WINDOWS,
};

use crate::engine::{self, LoadConfig};
use crate::parse::{parse_cpu_list, parse_duration, parse_targets};
use crate::registry::Registry;

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
    /// Open loop: send on ticks of this length (`10ms`), every send due since the last tick
    /// together, latency counted from its tick (h2load's `--rps` ticks every 10 ms or slower).
    /// Default 0s: each send at its own due time.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub pace_tick: Duration,
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
    pub shard: Option<brigade_records::shard::Shard>,
    /// Start (the warm-up) at this wall-clock time, an RFC 3339 time or UNIX seconds, so shards on
    /// several machines start together (fails if the time has passed)
    #[arg(long, value_name = "TIME", value_parser = crate::shard::parse_start_at)]
    pub start_at: Option<std::time::SystemTime>,
    /// Which attempt at this shard the run is, when its first was lost (its generator stopped):
    /// recorded in the result, where `brigade merge` names the shard as retried. A retry starts
    /// at a time of its own (--start-at)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub attempt: u32,
    /// The scenario's fixtures: with --setup-only, where to write them; else read them from this
    /// file instead of sending the setup steps (needed by shards of a scenario with setup steps)
    #[arg(long, value_name = "FILE")]
    pub fixtures: Option<PathBuf>,
    /// Send the scenario's setup steps once, write the fixtures they made to --fixtures, and exit
    #[arg(long, requires = "fixtures")]
    pub setup_only: bool,
    /// The wire protocol: h1 (plaintext HTTP/1.1), h2c (plaintext HTTP/2, prior knowledge),
    /// h1-tls or h2-tls (over TLS, ALPN offering only http/1.1 resp. h2), h3 (HTTP/3 over QUIC on
    /// the https:// target's port, UDP) [default: h1, or h1-tls when a target is https://]
    #[arg(long, value_name = "h1|h2c|h1-tls|h2-tls|h3")]
    pub protocol: Option<brigade_records::protocol::Protocol>,
    /// HTTP/2 and HTTP/3: requests in flight per connection (closed loop: per user; open loop: the schedule
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
            brigade_records::protocol::Protocol::H1Tls
        } else {
            brigade_records::protocol::Protocol::H1
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
            pace_tick: self.pace_tick,
            cpus: self.cpus.as_deref().map(parse_cpu_list).transpose()?,
            progress: !self.no_progress,
            seed: self.seed,
            protocol,
            streams: self.streams,
            tls: brigade_records::protocol::TlsClient {
                insecure: self.tls_insecure,
                resumption: !self.no_tls_resumption,
                ca: self.tls_ca.clone(),
                client_cert: self.tls_client_cert.clone(),
                client_key: self.tls_client_key.clone(),
            },
            sub_window: None,
        })
    }
}

/// Whether any target is an `https://` URL.
fn targets_https(targets: &BTreeMap<String, String>) -> bool {
    targets
        .values()
        .any(|url| url.trim().to_ascii_lowercase().starts_with("https://"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::DEFAULT_SERVICE;

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
        assert_eq!(
            (plain.protocol, plain.streams),
            (brigade_records::protocol::Protocol::H1, 1)
        );
        assert_eq!(plain.tls, brigade_records::protocol::TlsClient::default());
        assert_eq!(
            config(&["--target", "https://h:1"]).protocol,
            brigade_records::protocol::Protocol::H1Tls
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
        assert_eq!(
            (h2.protocol, h2.streams),
            (brigade_records::protocol::Protocol::H2Tls, 8)
        );
        assert!(h2.tls.insecure && !h2.tls.resumption);
        assert_eq!(h2.tls.ca.as_deref(), Some(std::path::Path::new("ca.pem")));
        let h3 = config(&[
            "--target",
            "https://h:1",
            "--protocol",
            "h3",
            "--streams",
            "4",
        ]);
        assert_eq!(
            (h3.protocol, h3.streams),
            (brigade_records::protocol::Protocol::H3, 4)
        );
        let refused = Cli::try_parse_from(["load", "--protocol", "h4"]);
        assert!(refused.is_err());
        let half = Cli::try_parse_from(["load", "--tls-client-cert", "c.pem"]);
        assert!(half.is_err(), "a client certificate needs its key");
    }
}

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
    #[arg(long, value_name = "PER_S", value_parser = crate::parse::parse_rate)]
    pub slo_start: Option<f64>,
    /// The SLO search's precision, percent: bisect until the bracket's ends are this close
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_PRECISION * 100.0,
          value_parser = crate::parse::parse_percent)]
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
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::parse::parse_duration)]
    pub slo_probe: std::time::Duration,
    /// Say how many server CPUs this many requests/s needs at the capacity found
    #[arg(long, value_name = "PER_S", value_parser = crate::parse::parse_rate)]
    pub slo_target_rate: Option<f64>,
}

impl SloArgs {
    /// The SLOs, parsed and checked; empty when no `--slo` was given.
    pub fn slos(&self) -> Result<Vec<Threshold>> {
        self.slo.iter().map(|t| threshold::parse_slo(t)).collect()
    }

    /// The search's settings from `start_per_s` (the `--slo-start`, or the caller's).
    pub fn settings(&self, start_per_s: f64) -> Result<SearchSettings> {
        let settings = SearchSettings {
            precision: self.slo_precision / 100.0,
            windows: self.slo_windows,
            max_windows: self.slo_max_windows,
            ..SearchSettings::from_start(start_per_s)
        };
        settings.check()?;
        engine::check_rate("--slo-start", settings.start_per_s)?;
        if self.slo_searches == 0 {
            anyhow::bail!("--slo-searches must be at least 1");
        }
        if let Some(rate) = self.slo_target_rate {
            engine::check_rate("--slo-target-rate", rate)?;
        }
        Ok(settings)
    }
}
