//! `brigade load` on its own, for working on the generator without building the runtimes:
//! `cargo run --release -p brigade-load --example load -- --target http://127.0.0.1:8081 --users 50`.
//! It knows the engine's own scenarios (`hello`) and any scenario file, and searches for the
//! capacity at an SLO with `--slo` as `brigade load` does.

use clap::Parser;

/// The load generator alone.
#[derive(Debug, Parser)]
#[command(name = "brigade-load")]
struct Cli {
    #[command(flatten)]
    load: brigade_load::cli::LoadCommand,
}

fn main() -> anyhow::Result<()> {
    brigade_load::cli::run_load(Cli::parse().load, &brigade_load::Registry::new())
}
