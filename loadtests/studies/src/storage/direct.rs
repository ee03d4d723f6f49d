//! The storage study through the `Store` trait, in this process: each phase opens a fresh store
//! (embedded: a new file in a new folder, its cache capped; memory: a new one; mongo: a database of
//! its own, dropped afterwards) and does exactly what the plan says, one operation at a time, every
//! document read back checked against the size written.
//!
//! Documents are `{"id": ..., "blob": [...]}` while growing (each unit one string of `unit_bytes`
//! letters, each growth one `Change::push` of one more) and `{"id": ..., "blob": "..."}` when of
//! fixed size (a rewrite sets a new string of the same length).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use brigade_kit::store::{
    self, Change, CollectionSpec, Doc, Filter, Outcome, Store, StoreConfig, StoreKind,
};
use serde_json::{json, Value};

use super::measure::{FixedResult, GrowingResult, GrowthRecorder, PhaseResult};
use super::plan::{payload, Bands, GrowthPlan};
use super::StorageSettings;
use brigade_records::histogram::LatencyHistogram;

/// The growing phase's collection.
const GROWING: CollectionSpec = CollectionSpec {
    name: "growing",
    unique: &[],
    indexed: &[],
};

/// The fixed phase's collection.
const FIXED: CollectionSpec = CollectionSpec {
    name: "fixed",
    unique: &[],
    indexed: &[],
};

/// A store opened for one phase, and what to remove when the phase is over.
struct Opened {
    store: Arc<dyn Store>,
    #[cfg(feature = "mongo")]
    mongo: Option<Arc<store::mongo::MongoStore>>,
    _folder: Option<tempfile::TempDir>,
}

impl Opened {
    /// Removes what the store holds (the database now, the folder on drop) and closes it.
    async fn discard(self) -> Result<()> {
        #[cfg(feature = "mongo")]
        if let Some(mongo) = &self.mongo {
            mongo
                .drop_database()
                .await
                .with_context(|| format!("Failed to drop {}", mongo.database_name()))?;
        }
        self.store
            .close()
            .await
            .context("Failed to close the store")
    }
}

/// Opens a fresh `kind` store holding `spec`, named after `phase`.
async fn open(
    kind: StoreKind,
    phase: &str,
    spec: CollectionSpec,
    settings: &StorageSettings,
) -> Result<Opened> {
    match kind {
        // By the registry's facts, not by name, so a new backend needs no arm here.
        _ if kind.needs_uri() => open_mongo(phase, spec, settings).await,
        _ if kind.durable() => {
            let folder = tempfile::Builder::new()
                .prefix(&format!("brigade-study-{phase}-"))
                .tempdir_in(&settings.data_dir)
                .with_context(|| {
                    format!(
                        "Failed to create a folder in {}",
                        settings.data_dir.display()
                    )
                })?;
            let config = StoreConfig {
                data_dir: folder.path().to_path_buf(),
                cache_bytes: Some(settings.cache_mib * 1024 * 1024),
                ..StoreConfig::default()
            };
            let store = store::open(kind, phase, &[spec], &config)
                .await
                .context("Failed to open the embedded store")?;
            Ok(Opened {
                store,
                #[cfg(feature = "mongo")]
                mongo: None,
                _folder: Some(folder),
            })
        }
        _ => Ok(Opened {
            store: store::open(kind, phase, &[spec], &StoreConfig::default())
                .await
                .context("Failed to open the memory store")?,
            #[cfg(feature = "mongo")]
            mongo: None,
            _folder: None,
        }),
    }
}

/// What the database server behind `store` is, in words, where there is one (mongo): its
/// `buildInfo` names, and for FerretDB what its figures stand for.
pub(crate) async fn server(store: StoreKind, settings: &StorageSettings) -> Option<String> {
    #[cfg(feature = "mongo")]
    if store == StoreKind::Mongo {
        let uri = settings.mongodb_uri.as_deref()?;
        let words = match store::mongo::server::describe(uri, settings.timeout).await {
            Ok(words) => words,
            Err(e) => format!("not asked: {e}"),
        };
        let caveat = if words.starts_with("FerretDB") {
            ": a stand-in for MongoDB's function, not its speed (SQLite under a translation \
             layer, which scans for filtered finds), so these figures describe FerretDB"
        } else {
            ""
        };
        return Some(format!("{words} at {uri} (buildInfo){caveat}"));
    }
    let _ = (store, settings);
    None
}

#[cfg(feature = "mongo")]
async fn open_mongo(
    phase: &str,
    spec: CollectionSpec,
    settings: &StorageSettings,
) -> Result<Opened> {
    let uri = settings
        .mongodb_uri
        .as_deref()
        .context("--stores mongo needs --mongodb-uri (or MONGODB_URI)")?;
    let database = format!("brigade_study_{}_{phase}", settings.run_token);
    let mongo = store::mongo::MongoStore::connect(uri, &database, &[spec], settings.timeout)
        .await
        .context("Failed to connect to MongoDB")?;
    if mongo.database_name() != database {
        bail!(
            "the MongoDB URI names the database {:?}; the study needs databases of its own (it \
             drops them afterwards): give a URI without a database",
            mongo.database_name()
        );
    }
    let mongo = Arc::new(mongo);
    Ok(Opened {
        store: mongo.clone(),
        mongo: Some(mongo),
        _folder: None,
    })
}

#[cfg(not(feature = "mongo"))]
async fn open_mongo(_: &str, _: CollectionSpec, _: &StorageSettings) -> Result<Opened> {
    bail!("this build has no MongoDB support (the `mongo` feature)")
}

/// The payload units of a growing document; fails unless it holds `units` strings of `unit_bytes`.
fn check_growing(doc: &Doc, id: &str, units: u64, unit_bytes: u64) -> Result<()> {
    let blob = doc.get("blob").and_then(Value::as_array);
    let found = blob.map_or(0, |b| b.len() as u64);
    let right = blob.is_some_and(|b| {
        b.iter()
            .all(|v| v.as_str().is_some_and(|s| s.len() as u64 == unit_bytes))
    });
    if found != units || !right {
        bail!(
            "document {id} read back with {found} units (sizes {:?}), but {units} units of \
             {unit_bytes} bytes were written",
            blob.map(|b| b
                .iter()
                .map(|v| v.as_str().map_or(0, str::len))
                .collect::<Vec<_>>())
        );
    }
    Ok(())
}

/// Fails unless a fixed-size document holds a string of `bytes`.
fn check_fixed(doc: &Doc, id: &str, bytes: u64) -> Result<()> {
    let found = doc.get("blob").and_then(Value::as_str).map(str::len);
    if found != Some(bytes as usize) {
        bail!("document {id} read back with {found:?} bytes, but {bytes} were written");
    }
    Ok(())
}

fn object(value: Value) -> Doc {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("built as an object"),
    }
}

/// Times one call.
async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let out = f.await;
    (out, started.elapsed())
}

/// The store's bytes on disk now.
async fn disk(store: &dyn Store) -> Result<Option<u64>> {
    store
        .size_on_disk()
        .await
        .context("Failed to ask the store its size on disk")
}

/// The growing phase on a fresh `kind` store.
pub(crate) async fn growing(
    kind: StoreKind,
    settings: &StorageSettings,
    plan: &GrowthPlan,
    bands: Bands,
    label: &str,
) -> Result<GrowingResult> {
    let opened = open(kind, "growing", GROWING, settings).await?;
    let result = run_growing(opened.store.as_ref(), settings, plan, bands, label).await;
    let discarded = opened.discard().await;
    let result = result?;
    discarded?;
    Ok(result)
}

async fn run_growing(
    store: &dyn Store,
    settings: &StorageSettings,
    plan: &GrowthPlan,
    bands: Bands,
    label: &str,
) -> Result<GrowingResult> {
    let counts = &settings.counts;
    let unit = counts.unit_bytes;
    let collection = GROWING.name;
    let mut rng = fastrand::Rng::with_seed(settings.seed ^ 0x9a1d);
    let mut ids = Vec::with_capacity(counts.growing_docs as usize);
    let mut units = vec![1u64; counts.growing_docs as usize];

    let began = Instant::now();
    let mut created = LatencyHistogram::new();
    for _ in 0..counts.growing_docs {
        let id = store::new_id();
        let doc = object(json!({"id": id, "blob": [payload(&mut rng, unit)]}));
        let (inserted, took) = timed(store.insert(collection, doc)).await;
        inserted.with_context(|| format!("Failed to create document {id}"))?;
        created.record(took);
        ids.push(id);
    }
    let create = PhaseResult {
        phase: "create".to_owned(),
        figures: super::measure::Figures::of(&created, began.elapsed().as_secs_f64()),
        on_disk_bytes: disk(store).await?,
    };
    println!(
        "{label}: growing: created {} documents of {unit} bytes, {:.3} ms each",
        counts.growing_docs, create.figures.mean_ms
    );

    let unit_kib = unit as f64 / 1024.0;
    let mut data_units: u64 = counts.growing_docs;
    let mut recorder = GrowthRecorder::new(bands, counts.group_ops);
    for &pick in &plan.picks {
        let i = pick as usize;
        let id = &ids[i];
        let started = Instant::now();
        let (found, read) = timed(store.get(collection, id)).await;
        let doc = found
            .with_context(|| format!("Failed to read document {id}"))?
            .ok_or_else(|| anyhow!("document {id} vanished"))?;
        check_growing(&doc, id, units[i], unit)?;
        let change = Change::default().push("blob", vec![Value::String(payload(&mut rng, unit))]);
        let (updated, grow) = timed(store.update(collection, id, &Filter::all(), &change)).await;
        match updated.with_context(|| format!("Failed to grow document {id}"))? {
            Outcome::Done(after) => check_growing(&after, id, units[i] + 1, unit)?,
            other => bail!("growing document {id} was refused: {other:?}"),
        }
        let doc_kib = units[i] as f64 * unit_kib;
        units[i] += 1;
        data_units += 1;
        recorder.checked(2);
        recorder.record(doc_kib, read, grow, started.elapsed());
        if recorder.group_full() {
            let on_disk = disk(store).await?;
            let data_mib = data_units as f64 * unit as f64 / (1024.0 * 1024.0);
            if let Some(g) = recorder.close_group(Some(data_mib), on_disk) {
                println!(
                    "{label}: growing: operations {}–{}: {:.3} ms (read {:.3}, grow {:.3}), \
                     documents {:.1} KiB, data {data_mib:.1} MiB, on disk {}",
                    g.first_op,
                    g.last_op,
                    g.figures.mean_ms,
                    g.read_mean_ms,
                    g.grow_mean_ms,
                    g.mean_doc_kib,
                    mib_text(on_disk)
                );
            }
        }
    }
    let data_mib = data_units as f64 * unit as f64 / (1024.0 * 1024.0);
    Ok(recorder.finish(create, Some(data_mib), disk(store).await?))
}

/// `12.3 MiB`, or `—` when unknown.
pub(super) fn mib_text(bytes: Option<u64>) -> String {
    bytes.map_or("—".to_owned(), |b| {
        format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
    })
}

/// The fixed-size phase on a fresh `kind` store.
pub(crate) async fn fixed(
    kind: StoreKind,
    settings: &StorageSettings,
    label: &str,
) -> Result<FixedResult> {
    let opened = open(kind, "fixed", FIXED, settings).await?;
    let result = run_fixed(opened.store.as_ref(), settings, label).await;
    let discarded = opened.discard().await;
    let result = result?;
    discarded?;
    Ok(result)
}

async fn run_fixed(
    store: &dyn Store,
    settings: &StorageSettings,
    label: &str,
) -> Result<FixedResult> {
    let counts = &settings.counts;
    let bytes = counts.fixed_bytes;
    let collection = FIXED.name;
    let mut rng = fastrand::Rng::with_seed(settings.seed ^ 0xf1ed);
    let mut picks = fastrand::Rng::with_seed(settings.seed ^ 0x91c5);
    let docs = counts.fixed_docs.max(1);
    let mut phases = Vec::new();
    let mut checked = 0;

    let mut ids = Vec::with_capacity(docs as usize);
    let began = Instant::now();
    let mut histogram = LatencyHistogram::new();
    for _ in 0..docs {
        let id = store::new_id();
        let doc = object(json!({"id": id, "blob": payload(&mut rng, bytes)}));
        let (inserted, took) = timed(store.insert(collection, doc)).await;
        inserted.with_context(|| format!("Failed to create document {id}"))?;
        histogram.record(took);
        ids.push(id);
    }
    phases.push(phase("create", &histogram, began, disk(store).await?));

    let began = Instant::now();
    let mut histogram = LatencyHistogram::new();
    for _ in 0..counts.fixed_reads {
        let id = &ids[picks.u64(0..docs) as usize];
        let (found, took) = timed(store.get(collection, id)).await;
        let doc = found
            .with_context(|| format!("Failed to read document {id}"))?
            .ok_or_else(|| anyhow!("document {id} vanished"))?;
        check_fixed(&doc, id, bytes)?;
        checked += 1;
        histogram.record(took);
    }
    phases.push(phase("read", &histogram, began, disk(store).await?));

    let began = Instant::now();
    let mut histogram = LatencyHistogram::new();
    for _ in 0..counts.fixed_rewrites {
        let id = &ids[picks.u64(0..docs) as usize];
        let (found, read) = timed(store.get(collection, id)).await;
        let doc = found
            .with_context(|| format!("Failed to read document {id}"))?
            .ok_or_else(|| anyhow!("document {id} vanished"))?;
        check_fixed(&doc, id, bytes)?;
        let change = Change::default().set("blob", payload(&mut rng, bytes));
        let (updated, write) = timed(store.update(collection, id, &Filter::all(), &change)).await;
        match updated.with_context(|| format!("Failed to rewrite document {id}"))? {
            Outcome::Done(after) => check_fixed(&after, id, bytes)?,
            other => bail!("rewriting document {id} was refused: {other:?}"),
        }
        checked += 2;
        histogram.record(read + write);
    }
    phases.push(phase(
        "read + rewrite",
        &histogram,
        began,
        disk(store).await?,
    ));
    for p in &phases {
        println!(
            "{label}: fixed: {} × {}: {:.3} ms each (p99 {:.3}), on disk {}",
            p.figures.ops,
            p.phase,
            p.figures.mean_ms,
            p.figures.p99_ms,
            mib_text(p.on_disk_bytes)
        );
    }
    Ok(FixedResult { phases, checked })
}

fn phase(
    name: &str,
    histogram: &LatencyHistogram,
    began: Instant,
    on_disk_bytes: Option<u64>,
) -> PhaseResult {
    PhaseResult {
        phase: name.to_owned(),
        figures: super::measure::Figures::of(histogram, began.elapsed().as_secs_f64()),
        on_disk_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_of_the_wrong_size_fails_loudly() {
        let doc = object(json!({"id": "a", "blob": ["xx", "yy"]}));
        check_growing(&doc, "a", 2, 2).unwrap();
        let err = check_growing(&doc, "a", 3, 2).unwrap_err().to_string();
        assert!(
            err.contains("read back with 2 units") && err.contains("3 units of 2 bytes"),
            "{err}"
        );
        assert!(
            check_growing(&doc, "a", 2, 3).is_err(),
            "unit sizes count too"
        );
        let fixed = object(json!({"id": "b", "blob": "abcd"}));
        check_fixed(&fixed, "b", 4).unwrap();
        assert!(check_fixed(&fixed, "b", 5).is_err());
        assert!(check_fixed(&doc, "a", 4).is_err());
    }
}
