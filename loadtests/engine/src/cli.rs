//! The command lines `brigade load` and `brigade compare` delegate to: clap `Args` structs and the
//! functions that run them. The `brigade` binary only mounts them as subcommands.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::engine::{self, LoadConfig};
use crate::scenario::Scenario;

// --- load (owned by the generator) ---

/// Where the services listen when no `--target` is given (Brigade's default ports).
pub const DEFAULT_TARGETS: [(&str, &str); 3] = [
    ("waiter", "http://127.0.0.1:8081"),
    ("tables", "http://127.0.0.1:8082"),
    ("kitchen", "http://127.0.0.1:8083"),
];

/// `brigade load`: run one scenario against running services and report what it measured.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Built-in scenarios: hello, waiter, tables, kitchen, all, read-heavy (or a TOML file, see docs/methodology.md).\n\
Examples:\n  brigade load --target http://127.0.0.1:8081 --scenario hello --users 50 --duration 30s\n  \
brigade load --scenario all --rate 2000 --connections 64 --duration 1m --json run.json"
)]
pub struct LoadArgs {
    /// Target base URL: `URL` for every service the scenario uses, or `NAME=URL` (repeatable).
    /// Default: waiter=http://127.0.0.1:8081, tables=…:8082, kitchen=…:8083.
    #[arg(long = "target", value_name = "[NAME=]URL")]
    pub targets: Vec<String>,
    /// Built-in scenario name or path to a scenario TOML file.
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
    /// List the built-in scenarios and exit.
    #[arg(long)]
    pub list_scenarios: bool,
}

impl LoadArgs {
    /// The engine configuration these arguments describe.
    pub fn config(&self) -> Result<LoadConfig> {
        let defaults = LoadConfig::default();
        let targets = parse_targets(&self.targets)?;
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
        })
    }
}

/// Runs `brigade load`: prints the table to stdout and writes `--json` if asked.
pub fn run_load(args: LoadArgs) -> Result<()> {
    if args.list_scenarios {
        for name in Scenario::builtin_names() {
            let s = Scenario::builtin(name)?;
            println!(
                "{name:<11} {} (services: {})",
                s.description(),
                s.services().join(", ")
            );
        }
        return Ok(());
    }
    let scenario = Scenario::load(&args.scenario)?;
    let config = args.config()?;
    let result = engine::run(&config, &scenario)?;
    print!("{}", crate::table::render(&result));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&result)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("Failed to write {}", path.display()))?;
        println!("result written to {}", path.display());
    }
    Ok(())
}

/// Turns `--target` values into service → URL: `URL` alone serves every service (`*`),
/// `NAME=URL` one service; no `--target` at all means Brigade's default ports.
pub fn parse_targets(values: &[String]) -> Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    if values.is_empty() {
        for (name, url) in DEFAULT_TARGETS {
            map.insert(name.to_string(), url.to_string());
        }
        return Ok(map);
    }
    for v in values {
        match v.split_once('=') {
            // A target for a service this scenario does not use is fine: one command line can
            // name all the services and run any scenario.
            Some((name, url)) if !name.contains("://") && !name.contains('/') => {
                map.insert(name.to_string(), url.to_string());
            }
            _ => {
                if map.insert("*".to_string(), v.clone()).is_some() {
                    bail!("--target {v}: only one target may be given without a NAME=");
                }
            }
        }
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
    if let Ok(secs) = t.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_duration(t)
        .map_err(|e| format!("{text:?} is not a duration (try 30s, 2m, 500ms): {e}"))
}

// --- compare (owned by the compare helper) ---
// `CompareArgs` and `run_compare` live in the compare module; re-exported here so the binary
// finds both commands in `brigade_loadtests::cli`.
pub use crate::compare::cli::{run_compare, CompareArgs};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_cpu_lists_and_targets_parse() {
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2.5").unwrap(), Duration::from_millis(2500));
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_cpu_list("0,2-4").unwrap(), vec![0, 2, 3, 4]);
        assert!(parse_cpu_list("3-1").is_err());

        let t = parse_targets(&["http://h:1".into(), "tables=http://h:2".into()]).unwrap();
        assert_eq!(t["*"], "http://h:1");
        assert_eq!(t["tables"], "http://h:2");
        // A service the scenario does not use may be named; two unnamed targets are ambiguous.
        assert_eq!(
            parse_targets(&["kitchen=http://h:3".into()]).unwrap()["kitchen"],
            "http://h:3"
        );
        assert!(parse_targets(&["http://h:1".into(), "http://h:2".into()]).is_err());
        assert_eq!(
            parse_targets(&[]).unwrap()["waiter"],
            "http://127.0.0.1:8081"
        );
    }
}
