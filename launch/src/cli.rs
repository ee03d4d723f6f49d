//! The command line a server binary gets: `serve` and `runtimes [--json]`, as a subcommand enum a
//! binary with commands of its own flattens into them ([`ServerCommand`]), or whole ([`main`]).

use brigade_kit::announce::{RuntimeInfo, RuntimesListing};
use clap::{Args, FromArgMatches, Subcommand};

use crate::{ServeArgs, Services};

/// `runtimes`.
#[derive(Debug, Clone, Args)]
pub struct RuntimesArgs {
    /// One JSON object instead of text:
    /// `{"runtimes":[{"name","version","threading"}],"stores":[...],"services":[...]}`.
    #[arg(long)]
    pub json: bool,
}

/// The commands every server binary has.
// `serve`'s flags make its variant large; the command is parsed once per process.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Subcommand)]
pub enum ServerCommand {
    /// Serve one service, or all, on one runtime.
    Serve(ServeArgs),
    /// List the runtimes and stores compiled into this binary, and the services it serves.
    Runtimes(RuntimesArgs),
}

impl ServerCommand {
    /// Runs the command over `services` (`serve` sets up logging first).
    pub fn run(self, services: &Services) -> anyhow::Result<()> {
        match self {
            ServerCommand::Serve(args) => {
                crate::init_logging(args.log_format);
                crate::serve(args, services)
            }
            ServerCommand::Runtimes(args) => {
                print!("{}", runtimes_text(&runtimes_listing(services), args.json));
                Ok(())
            }
        }
    }
}

/// What `runtimes` lists: the runtimes and stores compiled in, and `services`.
pub fn runtimes_listing(services: &Services) -> RuntimesListing {
    RuntimesListing {
        runtimes: brigade_runtimes::RUNTIMES
            .iter()
            .map(|r| RuntimeInfo {
                name: r.name.to_string(),
                version: r.version(),
                threading: r.threading.to_string(),
                engine: r.engine.to_string(),
                variant_of: r.variant_of.map(str::to_string),
                h3: r.h3_stack(),
            })
            .collect(),
        stores: brigade_kit::store::names()
            .into_iter()
            .map(str::to_string)
            .collect(),
        services: services.names().iter().map(|s| s.to_string()).collect(),
    }
}

/// The listing as `runtimes` prints it: one JSON line, or a line per runtime (`name version —
/// threading; I/O: engine`), then `stores: ...` and `services: ...`.
fn runtimes_text(listing: &RuntimesListing, json: bool) -> String {
    if json {
        return format!("{}\n", serde_json::to_string(listing).unwrap_or_default());
    }
    let mut out = String::new();
    for r in &listing.runtimes {
        out.push_str(&format!(
            "{:<11} {} — {}; I/O: {}\n",
            r.name, r.version, r.threading, r.engine
        ));
    }
    out.push_str(&format!("stores: {}\n", listing.stores.join(", ")));
    out.push_str(&format!("services: {}\n", listing.services.join(", ")));
    out
}

/// A server binary's whole `main`: parses the command line with `command` (its name, version and
/// about; e.g. `brigade_launch::clap::command!()`) plus [`ServerCommand`]'s subcommands, runs it
/// over `services`, and exits 1 with the error's cause chain on stderr if it fails.
pub fn main(command: clap::Command, services: Services) -> ! {
    let name = command.get_name().to_string();
    // Adding the subcommands sets the about to `ServerCommand`'s doc; the binary's own comes back.
    let about = command.get_about().cloned();
    let command = ServerCommand::augment_subcommands(command.subcommand_required(true));
    let matches = match about {
        Some(about) => command.about(about),
        None => command.about(None::<&str>),
    }
    .get_matches();
    let command = match ServerCommand::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if let Err(e) = command.run(&services) {
        eprintln!("{name}: {e:#}");
        std::process::exit(1);
    }
    std::process::exit(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_listing_names_runtimes_then_stores_then_services() {
        let listing = RuntimesListing {
            runtimes: vec![RuntimeInfo {
                name: "axum".into(),
                version: "axum 0.8".into(),
                threading: "tokio".into(),
                engine: "tokio (epoll)".into(),
                variant_of: None,
                h3: None,
            }],
            stores: vec!["memory".into(), "embedded".into()],
            services: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            runtimes_text(&listing, false),
            "axum        axum 0.8 — tokio; I/O: tokio (epoll)\nstores: memory, embedded\nservices: a, b\n"
        );
        let json: RuntimesListing =
            serde_json::from_str(runtimes_text(&listing, true).trim_end()).unwrap();
        assert_eq!(json, listing);
    }
}
