//! The classic studies (`brigade study storage | rpc | sweep | inproc | faults | conformance`) on
//! compare's servers, pinning and report writer.
//!
//! Each study is a subcommand of one family and writes the general study report
//! ([`brigade_report::study::StudyReport`]) with the comparison's writer. Today: `storage`
//! (growing documents, [`storage`]), `rpc` (payload shapes, [`rpc`]), `sweep` (clients,
//! keep-alive, sizes, bad URLs, memory after, [`sweep`]) and `inproc` (in-process against
//! loopback, [`inproc`]); each is an `Args` struct and a `run_*` function in its own module, and a
//! variant of [`StudyCommand`]; `faults` (what production does to a service, [`faults`]) and
//! `conformance` (does each runtime speak HTTP correctly, through Brigade and on its own control
//! server, [`conformance`]) too. The
//! three HTTP studies share their servers, order of runs, measurement and setup section ([`lab`])
//! with `compare`'s pieces.
//!
//! The load tester knows no application: what a study needs from one (the storage study's HTTP
//! growth description, the application `inproc` calls in process) the application registers in a
//! [`Registry`], which the `brigade` binary fills.

mod conformance;
mod faults;
mod inproc;
mod lab;
mod rpc;
mod storage;
mod sweep;

pub use faults::WriteProbe;
pub use inproc::InprocArgs;
pub use rpc::RpcArgs;
pub use storage::cli::StorageArgs;
pub use sweep::SweepArgs;

/// The titles of the study reports' tables, as a reader of their `report.json` finds them (the
/// conformance study's are `brigade_report::correctness`'s, which the comparison reads).
pub mod tables {
    pub use crate::inproc::{
        ADVANTAGE_TABLE, ANSWERS_TABLE, CALLS_TABLE, RUNS_TABLE as INPROC_RUNS_TABLE,
    };
    pub use crate::rpc::{OPERATIONS_TABLE, RUNS_TABLE as RPC_RUNS_TABLE};
    pub use crate::storage::report::{BANDS_TABLE, FIXED_TABLE, GROUPS_TABLE, PHASES_TABLE};
    pub use crate::sweep::handshakes::HANDSHAKES_TABLE;
    pub use crate::sweep::report::{
        BAD_URL_TABLE, CLIENTS_TABLE, MEMORY_TABLE, PEAKS_TABLE, RUNS_TABLE as SWEEP_RUNS_TABLE,
        SIZES_TABLE,
    };
}

/// What `study storage` does, by size (`--quick` is [`StorageCounts::QUICK`]).
pub use storage::plan::Counts as StorageCounts;

use std::sync::Arc;

use clap::{Args, Subcommand};

/// Arguments of `brigade study`.
#[derive(Debug, Clone, Args)]
pub struct StudyArgs {
    /// The study to run.
    #[command(subcommand)]
    pub study: StudyCommand,
}

/// `brigade study --help` with, after the list of studies, each study's own flags (made from
/// the studies' argument definitions, so it cannot drift from them): the flags a user reads in the
/// docs (`brigade study storage --stores …`) are then found from the top-level help too.
pub fn with_flag_index(study: clap::Command) -> clap::Command {
    let mut index =
        String::from("Each study's flags (`brigade study STUDY --help` for what they do):");
    for sub in study.get_subcommands() {
        let flags: Vec<String> = sub
            .get_arguments()
            .filter_map(|a| a.get_long())
            .map(|l| format!("--{l}"))
            .collect();
        index.push_str(&format!("\n  {:<8} {}", sub.get_name(), flags.join(" ")));
    }
    study.after_help(index)
}

/// The studies.
#[derive(Debug, Clone, Subcommand)]
pub enum StudyCommand {
    /// Growing documents (5,000 × 1 KB grown by 1 KB) and fixed-size ones (20,000 × 10 KB) on
    /// every store, with the cache capped so the data outgrows it.
    Storage(storage::cli::StorageArgs),
    /// Payload shapes (an RMI / CORBA / SOAP comparison): five operations by I client threads × J
    /// calls, on every runtime over loopback and in process through the route table.
    Rpc(rpc::RpcArgs),
    /// A web-server shoot-out: client counts with and without keep-alive, body sizes, a bad URL,
    /// a probe's responsiveness and the servers' memory after.
    Sweep(sweep::SweepArgs),
    /// In process against loopback: a typed operation (two serialisations, two
    /// deserialisations) and `GET /bench/hello`, by one and two clients.
    Inproc(inproc::InprocArgs),
    /// Faults under load on every runtime × store: abusive clients, SIGTERM, SIGKILL under writes,
    /// a database outage, a soak; errors, time to recover and what was lost.
    Faults(faults::cli::FaultsArgs),
    /// Does each runtime speak HTTP correctly, through Brigade and on its own? h2spec (h2c and
    /// TLS) and an HTTP/1.1 suite against the waiter and the runtime's own control server, every
    /// failure classified as the runtime's or Brigade's.
    Conformance(conformance::ConformanceArgs),
}

/// A growth description an application registers for `study storage --via http`.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinGrowth {
    /// What it is called in the report (`restaurant: kitchen orders`).
    pub name: &'static str,
    /// Its TOML (see [`storage::http`]).
    pub toml: &'static str,
}

/// An application a binary links in, for the studies that call it in process (`rpc`'s and
/// `inproc`'s in-process provider): a kit service, built on the memory store with no peers.
#[derive(Debug, Clone)]
pub struct InprocApp {
    /// What it is called in the report (`restaurant: waiter`).
    pub name: &'static str,
    /// The service (it must carry the kit's bench endpoints).
    pub service: Arc<dyn brigade_kit::Service>,
}

/// What the application supplies to the studies.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    /// The storage study's growth through HTTP, if the application has one.
    pub http_growth: Option<BuiltinGrowth>,
    /// The application called in process, if the binary links one.
    pub inproc: Option<InprocApp>,
    /// The faults study's scenarios (registered by name) and targets.
    pub load: brigade_load::Registry,
    /// The faults study's load under which faults are injected (a scenario of [`Self::load`]).
    pub fault_scenario: Option<&'static str>,
    /// The faults study's soak mix (creates and deletes as much as it adds).
    pub soak_scenario: Option<&'static str>,
    /// The faults study's create and read routes, to log acknowledged writes across a crash.
    pub write_probe: Option<faults::WriteProbe>,
}

/// Runs `brigade study ...`.
pub fn run_study(args: &StudyArgs, registry: &Registry) -> anyhow::Result<()> {
    match &args.study {
        StudyCommand::Storage(storage) => storage::cli::run_storage(storage, registry),
        StudyCommand::Rpc(rpc) => rpc::run_rpc(rpc, registry),
        StudyCommand::Sweep(sweep) => sweep::run_sweep(sweep),
        StudyCommand::Inproc(inproc) => inproc::run_inproc(inproc, registry),
        StudyCommand::Faults(faults) => faults::cli::run_faults(faults, registry),
        StudyCommand::Conformance(c) => conformance::run_conformance(c),
    }
}

/// The setup section every study that starts servers opens with: the machine, the versions with
/// the server binary's, and the command line; the study adds its own lines.
pub(crate) fn server_setup(
    launch: &brigade_meter::servers::Launch,
    command_line: &str,
) -> brigade_report::setup::Setup {
    let mut versions = brigade_report::setup::build_versions();
    let binary = launch.binary();
    versions.server_binary = binary.display().to_string();
    versions.server_binary_version = brigade_meter::servers::binary_version(binary);
    brigade_report::setup::Setup {
        machine: brigade_load::machine::describe(),
        versions,
        lines: Vec::new(),
        command_line: command_line.to_owned(),
    }
}

/// Prints a study's report on the terminal and where its files are.
pub(crate) fn show(report: &brigade_report::study::StudyReport, out_dir: &std::path::Path) {
    println!("\n{}", brigade_report::study::markdown::render(report));
    println!(
        "Reports: {} (report.md, report.json, report.html)",
        out_dir.display()
    );
}

#[cfg(test)]
mod help_tests {
    use clap::Args as _;

    #[test]
    fn the_study_help_lists_every_studys_own_flags() {
        let mut study =
            super::with_flag_index(super::StudyArgs::augment_args(clap::Command::new("study")));
        let help = study.render_help().to_string();
        for (name, flag) in [
            ("storage", "--growth"),
            ("rpc", "--iterations"),
            ("sweep", "--sizes"),
            ("inproc", "--calls"),
            ("faults", "--faults"),
            ("conformance", "--h2spec"),
        ] {
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(name) && l.contains("--"))
                .unwrap_or_else(|| panic!("no flag line for {name} in\n{help}"));
            assert!(line.contains(flag), "{line}");
        }
    }
}
