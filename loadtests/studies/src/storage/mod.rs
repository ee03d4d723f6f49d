//! `brigade study storage`: the growing-documents study. A persistent-object store was once measured
//! against MySQL and PHP sessions with documents that grow (5,000 documents of 1 KB, a random one
//! read and grown by 1 KB, averaged per 10,000 operations) and documents that do not (20,000 of
//! 10 KB, read, then read and rewritten); as the data outgrew the machine's RAM, fragmentation
//! slowed the database down. This study does the same to Brigade's stores, through the `Store` trait
//! (memory, embedded, mongo) and, as an option, through a running service's routes.
//!
//! The plan, in order:
//! 1. Decide the work ([`plan`]): the counts, a seeded sequence of documents to grow (the same for
//!    every store), the document-size bands.
//! 2. For every store and way in (`--via store`: the trait, in this process ([`direct`]); `--via
//!    http`: the application's routes on a server started the way `compare` starts one
//!    ([`http`])): the growing phase, then (through the trait) the fixed phase, each on a fresh
//!    store with its cache capped, one operation at a time, every document read back checked
//!    against the size written — a mismatch stops the study with an error.
//! 3. Record ([`measure`]) and write the general study report ([`report`]) with the comparison's
//!    writer: tables of store × phase, × group and × size band; charts of ms per operation against
//!    document size and of bytes on disk against operations.

pub(crate) mod cli;
pub(crate) mod direct;
pub(crate) mod http;
pub(crate) mod measure;
pub(crate) mod plan;
pub(crate) mod report;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use brigade_kit::store::StoreKind;
use serde::{Deserialize, Serialize};

use brigade_meter::pin;

use brigade_meter::servers::{self, Launch, ServerSpec};
use brigade_records::cpus::CpuPlan;
use brigade_report::study::StudyReport;
use http::GrowthDescription;
use measure::{FixedResult, GrowingResult};
use plan::{Bands, Counts, GrowthPlan};

use brigade_meter::servers::READY_TIMEOUT;

use brigade_meter::servers::STOP_GRACE;

/// The way into the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Via {
    /// The `Store` trait, in this process.
    Store,
    /// A running service's routes.
    Http,
}

/// A part of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Part {
    /// Documents that grow.
    Growing,
    /// Documents of one size, read and rewritten (through the store only).
    Fixed,
}

/// What `--via http` needs.
#[derive(Debug, Clone)]
pub(crate) struct HttpSettings {
    /// The server binary and how to start it (the contract of [`brigade_meter::servers`], as `compare`).
    pub launch: Launch,
    /// The services it will announce, when its `runtimes --json` says before it starts.
    pub services: Option<Vec<String>>,
    /// The runtime it serves with.
    pub runtime: String,
    /// How the application's documents are created, grown and read.
    pub growth: GrowthDescription,
}

/// Everything the study needs, resolved from the command line.
#[derive(Debug, Clone)]
pub(crate) struct StorageSettings {
    /// The stores, in order.
    pub stores: Vec<StoreKind>,
    /// The ways in, in order.
    pub via: Vec<Via>,
    /// The parts to run.
    pub parts: Vec<Part>,
    /// How much to do.
    pub counts: Counts,
    /// `--scale`.
    pub scale: f64,
    /// Whether `--quick` chose the counts.
    pub quick: bool,
    /// The seed of the documents' sequence and payloads.
    pub seed: u64,
    /// The cap on the store's cache, MiB (embedded: redb's).
    pub cache_mib: u64,
    /// MongoDB's URI, for `mongo`.
    pub mongodb_uri: Option<String>,
    /// Store operation (mongo) and HTTP request timeout.
    pub timeout: Duration,
    /// Where the embedded stores' folders are made (each removed after its phase).
    pub data_dir: PathBuf,
    /// Where the reports (and the server logs) go.
    pub out_dir: PathBuf,
    /// A token unique to this run, in the MongoDB databases' names.
    pub run_token: String,
    /// `--via http`'s settings (`None` when not asked for).
    pub http: Option<HttpSettings>,
    /// The command line, for the report.
    pub command_line: String,
}

/// What one store, one way in, measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SubjectResult {
    /// The store.
    pub store: String,
    /// The way in.
    pub via: Via,
    /// The runtime served with, for `--via http`.
    pub runtime: Option<String>,
    /// The growing phase, if run.
    pub growing: Option<GrowingResult>,
    /// The fixed phase, if run.
    pub fixed: Option<FixedResult>,
    /// How the server was set up and ended, for `--via http`; for mongo through the store, what
    /// the database server says it is (its `buildInfo`).
    pub server: Option<String>,
}

impl SubjectResult {
    /// Its name in tables and legends: `embedded`, `embedded via HTTP (axum)`.
    pub(crate) fn label(&self) -> String {
        match (&self.via, &self.runtime) {
            (Via::Http, Some(runtime)) => format!("{} via HTTP ({runtime})", self.store),
            (Via::Http, None) => format!("{} via HTTP", self.store),
            (Via::Store, _) => self.store.clone(),
        }
    }

    /// Its way in, as the `via` column shows it.
    pub(crate) fn via_text(&self) -> String {
        match (&self.via, &self.runtime) {
            (Via::Http, Some(runtime)) => format!("HTTP ({runtime})"),
            (Via::Http, None) => "HTTP".to_owned(),
            (Via::Store, _) => "store".to_owned(),
        }
    }
}

/// Runs the study and writes its reports into the settings' folder; returns the report.
pub(crate) fn run(settings: &StorageSettings) -> Result<StudyReport> {
    let began = Instant::now();
    let started_at = brigade_meter::clock::now_rfc3339();
    if settings.stores.is_empty() || settings.via.is_empty() || settings.parts.is_empty() {
        bail!("nothing to study: give at least one store, one way in and one part");
    }
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("Failed to create {}", settings.data_dir.display()))?;
    std::fs::create_dir_all(&settings.out_dir)
        .with_context(|| format!("Failed to create {}", settings.out_dir.display()))?;
    let counts = &settings.counts;
    let plan = GrowthPlan::new(counts, settings.seed);
    let bands = Bands::new(plan.max_units as f64 * counts.unit_bytes as f64 / 1024.0);
    println!(
        "brigade study storage: stores {}; via {}; growing {} documents × {} read + grow; fixed {} \
         documents, {} reads, {} rewrites; cache {} MiB",
        settings
            .stores
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        settings
            .via
            .iter()
            .map(|v| format!("{v:?}").to_lowercase())
            .collect::<Vec<_>>()
            .join(", "),
        counts.growing_docs,
        counts.growth_ops,
        counts.fixed_docs,
        counts.fixed_reads,
        counts.fixed_rewrites,
        settings.cache_mib
    );

    let mut results = Vec::new();
    for &store in &settings.stores {
        for &via in &settings.via {
            let result = match via {
                Via::Store => through_store(store, settings, &plan, bands),
                Via::Http => through_http(store, settings, &plan, bands),
            }
            .with_context(|| format!("{store} via {via:?}"))?;
            results.push(result);
        }
    }
    let mut study = report::build(settings, &results, started_at);
    study.wall_s = began.elapsed().as_secs_f64();
    brigade_report::write_all(&study, &settings.out_dir)?;
    Ok(study)
}

/// Both parts through the `Store` trait, on a runtime of their own.
fn through_store(
    store: StoreKind,
    settings: &StorageSettings,
    plan: &GrowthPlan,
    bands: Bands,
) -> Result<SubjectResult> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("Failed to build the study's runtime")?;
    let label = store.as_str();
    runtime.block_on(async {
        let growing = if settings.parts.contains(&Part::Growing) {
            Some(direct::growing(store, settings, plan, bands, label).await?)
        } else {
            None
        };
        let fixed = if settings.parts.contains(&Part::Fixed) {
            Some(direct::fixed(store, settings, label).await?)
        } else {
            None
        };
        Ok(SubjectResult {
            store: label.to_owned(),
            via: Via::Store,
            runtime: None,
            growing,
            fixed,
            server: direct::server(store, settings).await,
        })
    })
}

/// The growing part through the application's routes on a freshly started server.
fn through_http(
    store: StoreKind,
    settings: &StorageSettings,
    plan: &GrowthPlan,
    bands: Bands,
) -> Result<SubjectResult> {
    let http = settings
        .http
        .as_ref()
        .context("--via http needs a growth description")?;
    let mut result = SubjectResult {
        store: store.as_str().to_owned(),
        via: Via::Http,
        runtime: Some(http.runtime.clone()),
        growing: None,
        fixed: None,
        server: None,
    };
    if !settings.parts.contains(&Part::Growing) {
        return Ok(result);
    }
    let cpus = CpuPlan::split(&pin::available_cpus());
    let data = tempfile::Builder::new()
        .prefix("brigade-study-http-")
        .tempdir_in(&settings.data_dir)
        .with_context(|| {
            format!(
                "Failed to create a folder in {}",
                settings.data_dir.display()
            )
        })?;
    let spec = http_server(store, settings, http, &cpus, data.path())?;
    let process = servers::start_on_free_ports(&spec, &[], READY_TIMEOUT)?;
    let label = result.label();
    println!(
        "{label}: server pid {} ready in {:.2} s (CPUs {}, --workers {})",
        process.pid(),
        process.started_in().as_secs_f64(),
        brigade_records::cpus::list(&cpus.server),
        spec.workers
    );
    let targets = process
        .announced()
        .targets(http.growth.label(), &http.growth.services());
    let dir = data.path().to_path_buf();
    let on_disk = move || (store == StoreKind::Embedded).then(|| folder_bytes(&dir));
    let growing = match targets {
        Ok(targets) => grow_from_client_cpus(
            settings, http, &targets, plan, bands, &on_disk, &label, &cpus,
        ),
        Err(err) => Err(err.context("the growth description does not fit this server")),
    };
    let limits = process
        .limits_reported()
        .map(|l| format!("; limits: {l}"))
        .unwrap_or_default();
    let stop = process.stop(STOP_GRACE);
    println!("{label}: server {stop}");
    result.growing = Some(growing?);
    result.server = Some(format!(
        "`{}` on CPUs {}; {stop}{limits}",
        spec.command_line(),
        brigade_records::cpus::list(&cpus.server)
    ));
    Ok(result)
}

/// The server the HTTP growth runs against: the application's services on `store`, on the
/// server CPUs with as many workers, its data in `data` and its log under the study's folder.
fn http_server(
    store: StoreKind,
    settings: &StorageSettings,
    http: &HttpSettings,
    cpus: &CpuPlan,
    data: &Path,
) -> Result<ServerSpec> {
    let logs = settings.out_dir.join("logs");
    std::fs::create_dir_all(&logs)
        .with_context(|| format!("Failed to create {}", logs.display()))?;
    Ok(ServerSpec {
        launch: http.launch.clone(),
        services: http.services.clone(),
        runtime: http.runtime.clone(),
        store: store.as_str().to_owned(),
        mongodb_uri: settings.mongodb_uri.clone(),
        workers: cpus.server.len().max(1) as u32,
        port: 0,
        data_dir: data.to_path_buf(),
        preload: 0,
        // Fresh databases that the server drops when it stops (MongoDB keeps nothing behind).
        database_prefix: (store.as_str() == "mongo")
            .then(|| format!("study{}_", std::process::id())),
        log_path: logs.join(format!("http-{}-{}.log", http.runtime, store.as_str())),
        cpus: cpus.server_mask().map(<[usize]>::to_vec),
        handicap_us: 0.0,
        protocol: brigade_records::protocol::Protocol::H1,
    })
}

/// Runs the HTTP growth from a thread pinned to the generator CPUs (if any), so the client
/// never shares the server's.
#[allow(clippy::too_many_arguments)]
fn grow_from_client_cpus(
    settings: &StorageSettings,
    http: &HttpSettings,
    targets: &BTreeMap<String, String>,
    plan: &GrowthPlan,
    bands: Bands,
    on_disk: &(dyn Fn() -> Option<u64> + Sync),
    label: &str,
    cpus: &CpuPlan,
) -> Result<GrowingResult> {
    let client_cpus = cpus.generator_mask().map(<[usize]>::to_vec);
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                if let Some(cpus) = &client_cpus {
                    pin::pin_current_thread(cpus)?;
                }
                http::growing(
                    &http.growth,
                    targets,
                    settings.counts.growing_docs,
                    settings.counts.group_ops,
                    plan,
                    bands,
                    settings.timeout,
                    on_disk,
                    label,
                )
            })
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the HTTP client panicked")))
    })
}

/// The bytes of every file under `dir` (0 if it cannot be read).
fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => folder_bytes(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests;
