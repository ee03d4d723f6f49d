//! `brigade load` with the SLO search: the generator's flags ([`LoadArgs`]) and the search's
//! ([`SloArgs`]) as one subcommand. A binary mounts [`LoadCommand`] and hands [`run_load`] its
//! [`Registry`]: with `--slo` the search runs (`run`), without it the generator's own
//! `brigade load` does.

mod run;

use anyhow::Result;
use brigade_load::cli::LoadArgs;
use brigade_load::registry::Registry;
use brigade_load::threshold;

use crate::args::SloArgs;

/// `brigade load`: run one scenario against running services and report what it measured, or,
/// with `--slo`, search for the highest rate at which every SLO holds.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadCommand {
    /// The generator's flags.
    #[command(flatten)]
    pub load: LoadArgs,
    /// Capacity at an SLO: with `--slo`, the rates are the search's own (`--rate` is refused);
    /// each step is a `--warmup` and a `--duration` window (default 2s) on `--connections`
    #[command(flatten)]
    pub slo: SloArgs,
}

/// Runs `brigade load` with the scenarios and default targets in `registry`: the SLO search when
/// `--slo` is given, else one run (`brigade_load::cli::run_load`).
pub fn run_load(args: LoadCommand, registry: &Registry) -> Result<()> {
    if args.slo.slo.is_empty() || args.load.list_scenarios {
        return brigade_load::cli::run_load(args.load, registry);
    }
    threshold::parse_all(&args.load.thresholds)?;
    let scenario = registry.load(&args.load.scenario)?;
    run::run(&args, registry, &scenario)
}
