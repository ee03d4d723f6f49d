//! The `brigade study storage` command line: its arguments, their defaults (the original study's
//! counts, a 64 MiB cache like the original's RAM, the stores this build has) and the entry point.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use brigade_kit::store::StoreKind;
use clap::Args;

use super::http::GrowthDescription;
use super::plan::{Counts, DEFAULT_SEED};
use super::{HttpSettings, Part, StorageSettings, Via};
use crate::Registry;
use brigade_meter::servers::Launch;

/// The cache cap by default, MiB: the original study's machine had 64 MB of RAM.
pub(crate) const DEFAULT_CACHE_MIB: u64 = 64;

/// Arguments of `brigade study storage`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:\n  brigade study storage --quick\n  \
brigade study storage --stores embedded,mongo --mongodb-uri mongodb://127.0.0.1:27017\n  \
brigade study storage --via store,http --parts growing --scale 0.5")]
pub struct StorageArgs {
    /// Stores to study, comma-separated: memory, embedded, mongo
    /// [default: memory and embedded, and mongo when --mongodb-uri or MONGODB_URI is set]
    #[arg(long, value_delimiter = ',')]
    pub(crate) stores: Vec<StoreKind>,
    /// MongoDB URI for mongo (without a database: the study makes and drops its own)
    #[arg(long, env = "MONGODB_URI")]
    pub(crate) mongodb_uri: Option<String>,
    /// How to reach the store, comma-separated: store (the Store trait, in this process), http
    /// (the application's routes on a server started as `compare` starts one; the growing
    /// part only)
    #[arg(long, value_delimiter = ',', value_enum, default_value = "store")]
    pub(crate) via: Vec<Via>,
    /// Parts to run, comma-separated: growing, fixed [default: both]
    #[arg(long, value_delimiter = ',', value_enum)]
    pub(crate) parts: Vec<Part>,
    /// Multiplies every document and operation count (not the sizes, not the group length);
    /// more than 0, at most 1000
    #[arg(long, default_value_t = 1.0)]
    pub(crate) scale: f64,
    /// A CI-sized run (50 growing documents grown 500 times, 100 fixed ones read and rewritten
    /// 200 times): seconds per store
    #[arg(long)]
    pub(crate) quick: bool,
    /// Cap on the store's cache, MiB (embedded: redb's cache), so the data outgrows the cache,
    /// not the machine
    #[arg(long, default_value_t = DEFAULT_CACHE_MIB)]
    pub(crate) cache_mib: u64,
    /// Seed of the documents' sequence and payloads (the same for every store)
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub(crate) seed: u64,
    /// Timeout of one store operation (mongo) or HTTP request
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub(crate) timeout: Duration,
    /// Where the embedded stores' folders are made, each removed after its phase
    /// [default: the system's temporary folder]
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    /// Where to write report.json, report.md, report.html (and server logs)
    /// [default: results/study-storage-<UTC timestamp>]
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// --via http: the growth description (TOML) [default: the one this binary registers]
    #[arg(long, value_name = "FILE")]
    pub(crate) growth: Option<PathBuf>,
    /// --via http: the runtime to serve with [default: the first this binary has]
    #[arg(long)]
    pub(crate) runtime: Option<String>,
    /// --via http: the server binary, started as `compare` starts one (docs/embedding.md)
    /// [default: this executable]
    #[arg(long)]
    pub(crate) binary: Option<PathBuf>,
    /// --via http: start the server with this command template instead of the standard flags
    /// (placeholders as for `compare --server-command`)
    #[arg(long, value_name = "TEMPLATE")]
    pub(crate) server_command: Option<String>,
}

/// The largest `--scale`: a thousand times the seed's counts (5 million growing documents).
const MAX_SCALE: f64 = 1000.0;

impl StorageArgs {
    /// Resolves defaults (and `--quick`) into settings; `registry` supplies the application's
    /// growth description for `--via http`.
    pub(crate) fn settings(&self, registry: &Registry) -> Result<StorageSettings> {
        if !(self.scale > 0.0 && self.scale <= MAX_SCALE) {
            bail!(
                "--scale must be more than 0 and at most {MAX_SCALE}, not {}",
                self.scale
            );
        }
        if self.cache_mib == 0 {
            bail!("--cache-mib must be at least 1");
        }
        let stores = self.stores()?;
        let mut via = self.via.clone();
        via.dedup();
        let parts = if self.parts.is_empty() {
            vec![Part::Growing, Part::Fixed]
        } else {
            self.parts.clone()
        };
        let http = if via.contains(&Via::Http) {
            Some(self.http_settings(registry, &stores)?)
        } else {
            None
        };
        let base = if self.quick {
            Counts::QUICK
        } else {
            Counts::DEFAULT
        };
        let stamp = brigade_meter::clock::stamp();
        Ok(StorageSettings {
            stores,
            via,
            parts,
            counts: base.scaled(self.scale),
            scale: self.scale,
            quick: self.quick,
            seed: self.seed,
            cache_mib: self.cache_mib,
            mongodb_uri: self.mongodb_uri.clone(),
            timeout: self.timeout,
            data_dir: self.data_dir.clone().unwrap_or_else(std::env::temp_dir),
            out_dir: self
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from("results").join(format!("study-storage-{stamp}"))),
            run_token: format!("{}_{}", stamp.replace('-', "_"), std::process::id()),
            http,
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
        })
    }

    /// The stores asked for (default: every one compiled in, mongo only with a URI), each
    /// checked to be compiled in and mongo to have its URI.
    fn stores(&self) -> Result<Vec<StoreKind>> {
        let compiled = StoreKind::compiled();
        let stores = if self.stores.is_empty() {
            compiled
                .iter()
                .copied()
                .filter(|s| !s.needs_uri() || self.mongodb_uri.is_some())
                .collect()
        } else {
            self.stores.clone()
        };
        for store in &stores {
            if !compiled.contains(store) {
                bail!("the {store} store is not compiled into this binary");
            }
        }
        if stores.contains(&StoreKind::Mongo) && self.mongodb_uri.is_none() {
            bail!("--stores mongo needs --mongodb-uri (or MONGODB_URI)");
        }
        Ok(stores)
    }

    /// `--via http`'s settings: the server binary (checked to serve every store), the growth
    /// description (`--growth` or the application's) and the runtime (default: the binary's
    /// first).
    fn http_settings(&self, registry: &Registry, stores: &[StoreKind]) -> Result<HttpSettings> {
        let (launch, info) = Launch::resolve(
            self.binary.as_deref(),
            self.server_command.as_deref(),
            self.runtime.is_some(),
        )?;
        let growth = match (&self.growth, &registry.http_growth) {
            (Some(path), _) => GrowthDescription::from_file(path)?,
            (None, Some(builtin)) => GrowthDescription::parse(builtin.toml, builtin.name)?,
            (None, None) => {
                bail!("--via http needs --growth FILE: this binary registers no growth description")
            }
        };
        for store in stores {
            launch.check(store.as_str(), false, 1)?;
        }
        let runtime = match &self.runtime {
            Some(r) => r.clone(),
            None => info
                .runtime_names()
                .into_iter()
                .next()
                .context("the binary has no runtime")?,
        };
        Ok(HttpSettings {
            services: (launch.serves_all() && !info.services.is_empty())
                .then(|| info.services.clone()),
            launch,
            runtime,
            growth,
        })
    }
}

/// Runs `brigade study storage`: the study, the three reports, and the report on the terminal.
pub(crate) fn run_storage(args: &StorageArgs, registry: &Registry) -> Result<()> {
    let settings = args.settings(registry)?;
    let report = super::run(&settings)?;
    println!("\n{}", brigade_report::study::markdown::render(&report));
    println!(
        "Reports: {} (report.md, report.json, report.html)",
        settings.out_dir.display()
    );
    Ok(())
}
