//! The `brigade study faults` command line: its arguments, their defaults (the long forms: 1,000
//! slowloris connections, 10,000 idle ones, a 10-minute soak) and `--quick` (seconds per runtime ×
//! store, for CI and a first look), and the entry point.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::{Fault, FaultsSettings};
use crate::Registry;
use brigade_load::scenario::Scenario;
use brigade_meter::servers::Launch;

/// Arguments of `brigade study faults`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:\n  brigade study faults --quick\n  \
brigade study faults --stores embedded,mongo --mongodb-uri mongodb://127.0.0.1:27017 \\\n    \
--db-stop-command 'bash scripts/ferretdb.sh stop' \\\n    \
--db-start-command 'bash scripts/ferretdb.sh start --port 27017'")]
pub struct FaultsArgs {
    /// Runtimes, comma-separated [default: every runtime the binary has]
    #[arg(long, value_delimiter = ',')]
    pub(crate) runtimes: Vec<String>,
    /// Stores, comma-separated [default: embedded, and mongo when --mongodb-uri or MONGODB_URI is
    /// set]
    #[arg(long, value_delimiter = ',')]
    pub(crate) stores: Vec<String>,
    /// MongoDB URI for mongo (each run makes and drops its own databases)
    #[arg(long, env = "MONGODB_URI")]
    pub(crate) mongodb_uri: Option<String>,
    /// Faults, comma-separated [default: all; outage only on mongo with the two commands below]
    #[arg(long, value_delimiter = ',', value_enum)]
    pub(crate) faults: Vec<Fault>,
    /// The load under which faults are injected: a registered scenario or a file
    /// [default: the application's own, else hello]
    #[arg(long)]
    pub(crate) scenario: Option<String>,
    /// The soak's mix, which must create and delete as much as it adds [default: the
    /// application's own, else the load's scenario]
    #[arg(long)]
    pub(crate) soak_scenario: Option<String>,
    /// Closed-loop users of the load (the soak's connections)
    #[arg(long, default_value_t = 316)]
    pub(crate) users: u32,
    /// Length of each loaded run around a fault
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    pub(crate) duration: Duration,
    /// Length of each of the two soaks
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    pub(crate) soak: Duration,
    /// abuse: slowloris connections (a head a byte at a time)
    #[arg(long, default_value_t = 1000)]
    pub(crate) slowloris: usize,
    /// abuse: idle keep-alive connections
    #[arg(long, default_value_t = 10_000)]
    pub(crate) idle: usize,
    /// abuse: bodies that never finish
    #[arg(long, default_value_t = 100)]
    pub(crate) unfinished: usize,
    /// abuse: connections past the server's limit (start it with --max-connections below the
    /// abuse to see them closed; with the default limit they are admitted and closed by timeouts)
    #[arg(long, default_value_t = 0)]
    pub(crate) flood: usize,
    /// outage: how long the database stays down
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub(crate) outage: Duration,
    /// outage: a shell command that stops the database (SIGKILL, as a crash would)
    #[arg(long)]
    pub(crate) db_stop_command: Option<String>,
    /// outage: a shell command that starts it again on the same data and port
    #[arg(long)]
    pub(crate) db_start_command: Option<String>,
    /// Worker threads per server
    #[arg(long, default_value_t = 2)]
    pub(crate) workers: u32,
    /// A CI-sized run: 20 users, 6 s runs, 2 × 5 s soaks, 50 slowloris, 200 idle, 20 unfinished
    #[arg(long)]
    pub(crate) quick: bool,
    /// The server binary, started as `compare` starts one [default: this executable]
    #[arg(long)]
    pub(crate) binary: Option<PathBuf>,
    /// Start the server with this command template instead of the standard flags (placeholders
    /// as for `compare --server-command`)
    #[arg(long, value_name = "TEMPLATE")]
    pub(crate) server_command: Option<String>,
    /// Where to write report.json, report.md, report.html and the server logs
    /// [default: results/study-faults-<UTC timestamp>]
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

impl FaultsArgs {
    /// Resolves defaults (and `--quick`) into settings.
    pub(crate) fn settings(&self, registry: &Registry) -> Result<FaultsSettings> {
        let (launch, _, runtimes) = Launch::resolve_runtimes(
            self.binary.as_deref(),
            self.server_command.as_deref(),
            &self.runtimes,
        )?;
        let stores = self.stores()?;
        for store in &stores {
            launch.check(store, false, runtimes.len())?;
        }
        let db_commands = match (&self.db_stop_command, &self.db_start_command) {
            (Some(stop), Some(start)) => Some((stop.clone(), start.clone())),
            (None, None) => None,
            _ => bail!("--db-stop-command and --db-start-command go together"),
        };
        let faults = self.faults(db_commands.is_some(), &stores);
        let (scenario, soak_scenario) = self.scenarios(registry)?;
        let q = self.quick;
        let stamp = brigade_meter::clock::stamp();
        Ok(FaultsSettings {
            launch,
            runtimes,
            stores,
            mongodb_uri: self.mongodb_uri.clone(),
            faults,
            scenario,
            soak_scenario,
            users: if q { 20 } else { self.users },
            duration: if q {
                Duration::from_secs(6)
            } else {
                self.duration
            },
            soak: if q { Duration::from_secs(5) } else { self.soak },
            slowloris: if q { 50 } else { self.slowloris },
            idle: if q { 200 } else { self.idle },
            unfinished: if q { 20 } else { self.unfinished },
            flood: self.flood,
            outage: if q {
                Duration::from_secs(3)
            } else {
                self.outage
            },
            db_commands,
            probe: registry.write_probe,
            workers: self.workers.max(1),
            out_dir: self
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from("results").join(format!("study-faults-{stamp}"))),
            quick: q,
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
        })
    }

    /// The stores asked for (default: embedded, and mongo with a URI); mongo needs its URI.
    fn stores(&self) -> Result<Vec<String>> {
        let stores = if self.stores.is_empty() {
            let mut s = vec!["embedded".to_owned()];
            if self.mongodb_uri.is_some() {
                s.push("mongo".to_owned());
            }
            s
        } else {
            self.stores.clone()
        };
        if stores.iter().any(|s| s == "mongo") && self.mongodb_uri.is_none() {
            bail!("--stores mongo needs --mongodb-uri (or MONGODB_URI)");
        }
        Ok(stores)
    }

    /// The faults asked for (default: all, the outage only where it can be caused: on mongo
    /// with the commands that stop and start it).
    fn faults(&self, db_commands: bool, stores: &[String]) -> Vec<Fault> {
        let mut faults = if self.faults.is_empty() {
            vec![
                Fault::Abuse,
                Fault::Sigterm,
                Fault::Crash,
                Fault::Outage,
                Fault::Soak,
            ]
        } else {
            self.faults.clone()
        };
        if self.faults.is_empty() && (!db_commands || !stores.iter().any(|s| s == "mongo")) {
            faults.retain(|f| *f != Fault::Outage);
        }
        faults
    }

    /// The load's scenario and the soak's (default: the application's, else `hello`; the soak's
    /// default is the load's).
    fn scenarios(&self, registry: &Registry) -> Result<(Scenario, Scenario)> {
        let load = &registry.load;
        let scenario_name = self
            .scenario
            .clone()
            .or_else(|| registry.fault_scenario.map(str::to_owned))
            .unwrap_or_else(|| "hello".to_owned());
        let scenario = load
            .load(&scenario_name)
            .with_context(|| format!("the load's scenario {scenario_name:?}"))?;
        let soak_name = self
            .soak_scenario
            .clone()
            .or_else(|| registry.soak_scenario.map(str::to_owned))
            .unwrap_or(scenario_name);
        let soak_scenario = load
            .load(&soak_name)
            .with_context(|| format!("the soak's scenario {soak_name:?}"))?;
        Ok((scenario, soak_scenario))
    }
}

/// Runs `brigade study faults`: the study, the three reports, and the report on the terminal.
pub(crate) fn run_faults(args: &FaultsArgs, registry: &Registry) -> Result<()> {
    let settings = args.settings(registry)?;
    let report = super::run(&settings)?;
    println!("\n{}", brigade_report::study::markdown::render(&report));
    println!(
        "Reports: {} (report.md, report.json, report.html)",
        settings.out_dir.display()
    );
    Ok(())
}
