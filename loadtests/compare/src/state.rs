//! A fresh, identical store state for every measured run, so that the order of runs cannot move a
//! result: every run gets a server process of its own, started for it and stopped after it, on a
//! store state made for it alone.
//!
//! - **embedded**: a fresh, empty data folder; with a preload, a copy of a folder filled once per
//!   preload by the server itself (`serve --preload N`; copying is far quicker than filling, and is done before
//!   the server starts, outside the measured window).
//! - **memory**: the fresh process is the fresh state; with a preload it fills itself at start-up
//!   (`--preload N`), before it prints its listening lines.
//! - **mongo**: fresh databases, named by a prefix of their own per run (`--database-prefix`), filled
//!   at start-up when preloading, and dropped by the server when it stops
//!   (`--drop-databases-on-exit`).
//!
//! The scenario's fixtures are then made on that state by the generator, before the clock starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;

use brigade_meter::servers::{self, ServerSpec};
use brigade_report::verdict::count;
use brigade_report::{PreparedState, StateSetup};

use brigade_meter::servers::READY_TIMEOUT;

/// Extra start-up time allowed per preloaded document (all collections of all services): generous,
/// since a debug build filling MongoDB is slow.
const READY_PER_DOCUMENT: Duration = Duration::from_micros(600);

/// How long a server preloading `preload` documents per collection may take to be ready.
pub(crate) fn ready_timeout(preload: u64) -> Duration {
    READY_TIMEOUT + READY_PER_DOCUMENT * u32::try_from(preload).unwrap_or(u32::MAX)
}

/// The state one run starts from, made for it alone.
#[derive(Debug)]
pub(crate) struct RunState {
    /// The data folder handed to the server (removed when dropped).
    pub data: tempfile::TempDir,
    /// `--preload` for the server (0 when the data is already there or there is none).
    pub preload_arg: u64,
    /// `--database-prefix` for the server, for a store shared between runs.
    pub database_prefix: Option<String>,
    /// In words, for the report.
    pub how: String,
    /// Seconds spent copying a prepared folder.
    pub copy_s: Option<f64>,
    /// Documents per collection already in the data (a copied folder's, as its preparing server
    /// reported them).
    pub preloaded: BTreeMap<String, u64>,
}

/// Makes every run's fresh state, and keeps the prepared folders it copies from.
#[derive(Debug)]
pub(crate) struct FreshState {
    store: String,
    prefix_base: String,
    prepared: BTreeMap<u64, (tempfile::TempDir, BTreeMap<String, u64>)>,
    /// The prepared folders, as the report records them.
    pub records: Vec<PreparedState>,
}

impl FreshState {
    /// No prepared folders yet; database prefixes are unique to this process.
    pub(crate) fn new(store: &str) -> FreshState {
        FreshState {
            store: store.to_owned(),
            prefix_base: format!("cmp{}r", std::process::id()),
            prepared: BTreeMap::new(),
            records: Vec::new(),
        }
    }

    /// A sentence for the report: how each run's state was made.
    pub(crate) fn describe(store: &str, preloads: &[u64]) -> String {
        let preloading = preloads.iter().any(|&n| n > 0);
        let state = match store {
            "embedded" if preloading => {
                "a fresh data folder: empty, or for a preload a copy of a folder filled once per \
                 preload by the server itself (`serve --preload N`; copied before the server starts, outside \
                 the measured window)"
            }
            "embedded" => "a fresh, empty data folder",
            "memory" if preloading => {
                "the memory store, empty at start, filled with the preload by the server at \
                 start-up (`--preload N`, before it listens)"
            }
            "memory" => "the memory store, empty at start",
            "mongo" if preloading => {
                "fresh databases (a `--database-prefix` per run), filled with the preload by the \
                 server at start-up and dropped when it stops"
            }
            _ => "fresh databases (a `--database-prefix` per run), dropped when the server stops",
        };
        format!(
            "every run has a server process of its own, started for it and stopped after it, on \
             {state}; the scenario's fixtures are made on that state before the clock starts. In an \
             isolated run only the measured runtime's server is alive, so no idle server shares its \
             CPUs; side by side, every runtime's server of the cell is alive at once, each on a state \
             of its own made the same way."
        )
    }

    /// For the embedded store, fills a data folder once for every non-zero preload, with a server
    /// started from `template` (its port, folder, preload and log replaced); others need nothing.
    pub(crate) fn prepare(
        &mut self,
        template: &ServerSpec,
        preloads: &[u64],
        logs: &Path,
    ) -> anyhow::Result<()> {
        if self.store != "embedded" {
            return Ok(());
        }
        for &preload in preloads.iter().filter(|&&n| n > 0) {
            if self.prepared.contains_key(&preload) {
                continue;
            }
            let folder = tempfile::Builder::new()
                .prefix(&format!("brigade-compare-prepared-{preload}-"))
                .tempdir()
                .context("Failed to create a data folder to prepare")?;
            let log = logs.join(format!("prepare-{preload}.log"));
            let spec = ServerSpec {
                data_dir: folder.path().to_path_buf(),
                preload,
                database_prefix: None,
                log_path: log.clone(),
                ..template.clone()
            };
            println!(
                "Preparing a data folder with {} documents per collection…",
                count(preload)
            );
            let server = servers::start_on_free_ports(&spec, &[], ready_timeout(preload))
                .with_context(|| format!("Failed to prepare the {preload}-document data folder"))?;
            let startup_s = server.started_in().as_secs_f64();
            let fill_s = server.preloaded().iter().map(|p| p.seconds).sum();
            let held: BTreeMap<String, u64> = server
                .preloaded()
                .iter()
                .map(|p| (p.collection.clone(), p.documents + p.existing))
                .collect();
            // A clean stop: the store is closed, so its files can be copied as they are.
            let stop = server.stop(brigade_meter::servers::STOP_GRACE);
            let bytes = folder_bytes(folder.path())?;
            println!(
                "Prepared {}: filled in {fill_s:.2} s, {:.1} MiB ({stop})",
                folder.path().display(),
                bytes as f64 / (1024.0 * 1024.0)
            );
            self.records.push(PreparedState {
                preload,
                startup_s,
                fill_s,
                bytes,
                stop: Some(stop),
                log: log.display().to_string(),
            });
            self.prepared.insert(preload, (folder, held));
        }
        Ok(())
    }

    /// The fresh state for run number `index` (`runtime` names its folder) with `preload`.
    pub(crate) fn for_run(
        &self,
        index: usize,
        runtime: &str,
        preload: u64,
    ) -> anyhow::Result<RunState> {
        let data = tempfile::Builder::new()
            .prefix(&format!("brigade-compare-{runtime}-"))
            .tempdir()
            .context("Failed to create a data folder")?;
        let filled = |how: &str| {
            if preload > 0 {
                format!(
                    "{how}, filled with {} per collection at start-up",
                    count(preload)
                )
            } else {
                how.to_owned()
            }
        };
        Ok(match self.store.as_str() {
            "embedded" => match self.prepared.get(&preload) {
                Some((prepared, held)) => {
                    let began = Instant::now();
                    copy_folder(prepared.path(), data.path())?;
                    RunState {
                        data,
                        preload_arg: 0,
                        database_prefix: None,
                        how: format!(
                            "copy of the folder prepared with {} per collection",
                            count(preload)
                        ),
                        copy_s: Some(began.elapsed().as_secs_f64()),
                        preloaded: held.clone(),
                    }
                }
                None => RunState {
                    data,
                    preload_arg: preload,
                    database_prefix: None,
                    how: filled("fresh data folder"),
                    copy_s: None,
                    preloaded: BTreeMap::new(),
                },
            },
            "mongo" => {
                let prefix = format!("{}{index}_", self.prefix_base);
                RunState {
                    data,
                    preload_arg: preload,
                    how: filled(&format!("fresh databases {prefix}*")),
                    database_prefix: Some(prefix),
                    copy_s: None,
                    preloaded: BTreeMap::new(),
                }
            }
            _ => RunState {
                data,
                preload_arg: preload,
                database_prefix: None,
                how: filled("fresh process"),
                copy_s: None,
                preloaded: BTreeMap::new(),
            },
        })
    }

    /// The report's record of how state was made.
    pub(crate) fn setup(&self, preloads: &[u64]) -> StateSetup {
        StateSetup {
            how: FreshState::describe(&self.store, preloads),
            prepared: self.records.clone(),
        }
    }
}

/// Copies the files of `from` (and its folders, recursively) into the existing folder `to`.
fn copy_folder(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in
        std::fs::read_dir(from).with_context(|| format!("Failed to read {}", from.display()))?
    {
        let entry = entry?;
        let target: PathBuf = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_folder(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).with_context(|| {
                format!(
                    "Failed to copy {} to {}",
                    entry.path().display(),
                    target.display()
                )
            })?;
        }
    }
    Ok(())
}

/// The bytes of the files under `folder`.
fn folder_bytes(folder: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(folder)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            folder_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_gets_its_own_folder_and_mongo_runs_their_own_databases() {
        let mongo = FreshState::new("mongo");
        let a = mongo.for_run(0, "axum", 0).unwrap();
        let b = mongo.for_run(1, "axum", 0).unwrap();
        assert_ne!(a.data.path(), b.data.path());
        let (pa, pb) = (a.database_prefix.unwrap(), b.database_prefix.unwrap());
        assert_ne!(pa, pb);
        assert!(pa.len() <= 32 && pa.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'));
        let memory = FreshState::new("memory");
        let run = memory.for_run(3, "warp", 1_000).unwrap();
        assert_eq!((run.preload_arg, run.database_prefix), (1_000, None));
        assert!(run.how.contains("fresh process"), "{}", run.how);
    }

    #[test]
    fn an_embedded_run_with_a_preload_copies_the_prepared_folder() {
        let mut state = FreshState::new("embedded");
        let prepared = tempfile::tempdir().unwrap();
        std::fs::write(prepared.path().join("db.redb"), b"prepared bytes").unwrap();
        std::fs::create_dir(prepared.path().join("sub")).unwrap();
        std::fs::write(prepared.path().join("sub/more"), b"x").unwrap();
        assert_eq!(folder_bytes(prepared.path()).unwrap(), 15);
        state.prepared.insert(
            200,
            (prepared, BTreeMap::from([("things".to_owned(), 200)])),
        );
        let run = state.for_run(0, "axum", 200).unwrap();
        assert_eq!(run.preload_arg, 0, "the data is there already");
        assert_eq!(
            std::fs::read(run.data.path().join("db.redb")).unwrap(),
            b"prepared bytes"
        );
        assert!(run.data.path().join("sub/more").exists());
        assert!(run.copy_s.is_some());
        assert_eq!(run.preloaded["things"], 200);
        // Another run gets another copy; a run without a preload an empty folder.
        let other = state.for_run(1, "hyper", 200).unwrap();
        assert_ne!(other.data.path(), run.data.path());
        let empty = state.for_run(2, "hyper", 0).unwrap();
        assert_eq!(std::fs::read_dir(empty.data.path()).unwrap().count(), 0);
    }
}
