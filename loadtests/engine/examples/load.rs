//! `brigade load` on its own, for working on the generator without building the runtimes:
//! `cargo run --release -p brigade-loadtests --example load -- --target http://127.0.0.1:8081 --users 50`.

use clap::Parser;

/// The load generator alone.
#[derive(Debug, Parser)]
#[command(name = "brigade-load")]
struct Cli {
    #[command(flatten)]
    load: brigade_loadtests::cli::LoadArgs,
}

fn main() -> anyhow::Result<()> {
    brigade_loadtests::cli::run_load(Cli::parse().load)
}
