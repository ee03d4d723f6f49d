//! The embedded backend: one redb file per service, crash-safe on a local disk.
//!
//! - Writes go to one writer thread that commits them in groups, one durable transaction
//!   (`Durability::Immediate`, one fsync) per group, and answers each caller only once its group is
//!   durable (`writer.rs` explains why and how). redb allows one write transaction at a time, which
//!   is also what makes a conditional update atomic: the condition is read and the change written
//!   inside the same transaction.
//! - Every unique and indexed field has tables of its own (`layout.rs`), written in the same
//!   transaction as the document, so a crash never leaves an index out of step with its documents.
//!   Lists filtered on an indexed field walk the index and read only the page (`read.rs`).
//! - Reads hand back the stored JSON bytes ([`Store::get_json`], [`Store::list_json`]); the typed
//!   methods decode them once.
//!
//! Reads run inline, on the caller's thread, while the whole file fits in redb's cache
//! ([`ReadPath::Auto`]); otherwise they hop to tokio's blocking pool. Why that is safe: a redb read
//! transaction reads the last committed snapshot and never waits for the writer. The writer's
//! fsync runs with no lock held that a reader takes (redb 4 releases its header and state locks
//! before `sync_data`, and pages of a durable commit are written out before the fsync, not kept in
//! a buffer readers must consult), so a read costs what a B-tree walk through cached pages costs:
//! microseconds, less than the hop itself (a thread handoff each way). What would block is a page
//! that is not in redb's cache: a `pread` that may wait on the disk. That can only happen when the
//! file has outgrown the cache (checked after every commit), and then reads take the blocking
//! pool again, as do lists whose plan visits more than [`INLINE_WORK`] entries (scans, deep
//! offsets), which would hold a current-thread runtime (actix's) too long. No `block_in_place`
//! anywhere. `benches/group_commit.rs` prints both paths' cost.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, ReadableDatabase};

use super::keys::decode_doc;
use super::*;

mod layout;
mod read;
mod writer;

pub use writer::CommitStats;

use layout::Layout;
use writer::{Answer, Work, Writer};

/// A list whose plan visits more entries than this runs on the blocking pool, even when reads may
/// run inline.
pub const INLINE_WORK: u64 = 2_000;

/// redb's default cache size, used to decide whether reads may run inline when no cap is set.
const REDB_DEFAULT_CACHE: u64 = 1024 * 1024 * 1024;

/// Where reads run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPath {
    /// Inline while the file fits in redb's cache, else on the blocking pool (the default).
    Auto,
    /// Always on the caller's thread (lists with heavy plans still hop).
    Inline,
    /// Always on tokio's blocking pool.
    Pool,
}

/// The embedded backend's registry entry (feature `embedded`).
pub(crate) const BACKEND: Backend = Backend {
    name: "embedded",
    about: "redb, one file per service under --data-dir",
    durable: true,
    needs_uri: false,
    open,
};

/// Opens `<data_dir>/<database>.redb`.
fn open<'a>(
    database: &'a str,
    collections: &'a [CollectionSpec],
    config: &'a StoreConfig,
) -> BoxFuture<'a, Result<Arc<dyn Store>, StoreError>> {
    Box::pin(async move {
        let path = config.data_dir.join(format!("{database}.redb"));
        let store = EmbeddedStore::open(&path, collections, config.cache_bytes).await?;
        Ok(Arc::new(store) as Arc<dyn Store>)
    })
}

/// The embedded redb store.
pub struct EmbeddedStore {
    db: Arc<Database>,
    layouts: HashMap<&'static str, Arc<Layout>>,
    path: PathBuf,
    writer: Arc<Writer>,
    read_path: AtomicU8,
}

pub(super) fn internal(e: impl fmt::Display) -> StoreError {
    StoreError::Internal(e.to_string())
}

impl EmbeddedStore {
    /// Opens (or creates) the database file at `path` with `collections`; `cache_bytes` caps redb's
    /// cache (its default, 1 GiB, when `None`). Index tables missing from the file (one written
    /// before indexes existed, or a newly declared field) are built from its documents first.
    pub async fn open(
        path: &Path,
        collections: &[CollectionSpec],
        cache_bytes: Option<u64>,
    ) -> Result<EmbeddedStore, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| internal(format!("creating {}: {e}", dir.display())))?;
        }
        let path = path.to_path_buf();
        let layouts: Vec<Layout> = collections.iter().map(|c| Layout::new(*c)).collect();
        let (db, layouts) = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || -> Result<(Database, Vec<Layout>), StoreError> {
                let mut builder = Database::builder();
                if let Some(bytes) = cache_bytes {
                    builder.set_cache_size(usize::try_from(bytes).unwrap_or(usize::MAX));
                }
                let db = builder
                    .create(&path)
                    .map_err(|e| internal(format!("opening {}: {e}", path.display())))?;
                let mut tx = db.begin_write().map_err(internal)?;
                tx.set_durability(redb::Durability::Immediate)
                    .map_err(internal)?;
                layout::prepare(&tx, &layouts)?;
                tx.commit().map_err(internal)?;
                Ok((db, layouts))
            })
            .await
            .map_err(internal)??
        };
        let db = Arc::new(db);
        let writer = Arc::new(Writer::start(
            db.clone(),
            path.clone(),
            cache_bytes.unwrap_or(REDB_DEFAULT_CACHE),
        )?);
        Ok(EmbeddedStore {
            db,
            layouts: layouts
                .into_iter()
                .map(|l| (l.spec.name, Arc::new(l)))
                .collect(),
            path,
            writer,
            read_path: AtomicU8::new(ReadPath::Auto as u8),
        })
    }

    /// How many durable commits and writes the store has made (groups form when commits < writes).
    pub fn commit_stats(&self) -> CommitStats {
        self.writer.stats()
    }

    /// Sets where reads run (benchmarks compare the paths; [`ReadPath::Auto`] is the default).
    pub fn set_read_path(&self, path: ReadPath) {
        self.read_path.store(path as u8, Ordering::Relaxed);
    }

    fn inline(&self) -> bool {
        match self.read_path.load(Ordering::Relaxed) {
            x if x == ReadPath::Inline as u8 => true,
            x if x == ReadPath::Pool as u8 => false,
            _ => self.writer.shared.fits_cache.load(Ordering::Relaxed),
        }
    }

    fn layout(&self, collection: &str) -> Result<Arc<Layout>, StoreError> {
        self.layouts
            .get(collection)
            .cloned()
            .ok_or_else(|| internal(format!("unknown collection {collection}")))
    }

    async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        tokio::task::spawn_blocking(f).await.map_err(internal)?
    }

    async fn outcome(&self, layout: Arc<Layout>, work: Work) -> Result<Outcome, StoreError> {
        match self.writer.submit(layout, work).await? {
            Answer::Outcome(o) => Ok(o),
            Answer::Inserted => Err(internal("the writer answered an insert to a change")),
        }
    }
}

impl Drop for EmbeddedStore {
    fn drop(&mut self) {
        // Lets the writer answer what is queued, and releases the file for a later open.
        self.writer.stop();
    }
}

/// How many documents one `insert_many` commits at a time (each chunk is atomic on its own).
const INSERT_CHUNK: usize = 4_096;

#[async_trait]
impl Store for EmbeddedStore {
    fn kind(&self) -> &'static str {
        BACKEND.name
    }

    async fn insert(&self, collection: &str, doc: Doc) -> Result<(), StoreError> {
        let layout = self.layout(collection)?;
        self.writer
            .submit(layout, Work::Insert(vec![doc]))
            .await
            .map(drop)
    }

    /// Inserts in chunks of 4,096 documents, each one transaction (all of a chunk or none of it);
    /// when a chunk fails, the chunks before it are stored.
    async fn insert_many(&self, collection: &str, docs: Vec<Doc>) -> Result<(), StoreError> {
        let layout = self.layout(collection)?;
        let mut docs = docs.into_iter().peekable();
        while docs.peek().is_some() {
            let chunk: Vec<Doc> = docs.by_ref().take(INSERT_CHUNK).collect();
            self.writer
                .submit(layout.clone(), Work::Insert(chunk))
                .await?;
        }
        Ok(())
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Doc>, StoreError> {
        self.get_json(collection, id)
            .await?
            .map(|b| decode_doc(&b))
            .transpose()
    }

    async fn get_json(&self, collection: &str, id: &str) -> Result<Option<Bytes>, StoreError> {
        let layout = self.layout(collection)?;
        if self.inline() {
            return read::get(&self.db, &layout, id);
        }
        let (db, id) = (self.db.clone(), id.to_string());
        Self::blocking(move || read::get(&db, &layout, &id)).await
    }

    async fn list(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<Listing, StoreError> {
        self.list_json(collection, filter, page).await?.decode()
    }

    async fn list_json(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<JsonListing, StoreError> {
        let layout = self.layout(collection)?;
        if self.inline() {
            let tx = self.db.begin_read().map_err(internal)?;
            let plan = read::plan(&tx, &layout, filter)?;
            if plan.work(filter, page) <= INLINE_WORK {
                return read::run(&tx, &layout, filter, page, &plan);
            }
            let filter = filter.clone();
            return Self::blocking(move || read::run(&tx, &layout, &filter, page, &plan)).await;
        }
        let (db, filter) = (self.db.clone(), filter.clone());
        Self::blocking(move || {
            let tx = db.begin_read().map_err(internal)?;
            let plan = read::plan(&tx, &layout, &filter)?;
            read::run(&tx, &layout, &filter, page, &plan)
        })
        .await
    }

    async fn update(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
        change: &Change,
    ) -> Result<Outcome, StoreError> {
        if change.set.iter().any(|(k, _)| k == "id") {
            return Err(internal("a document's id cannot change"));
        }
        let work = Work::Update {
            id: id.to_string(),
            expect: expect.clone(),
            change: change.clone(),
        };
        self.outcome(self.layout(collection)?, work).await
    }

    async fn delete(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
    ) -> Result<Outcome, StoreError> {
        let work = Work::Delete {
            id: id.to_string(),
            expect: expect.clone(),
        };
        self.outcome(self.layout(collection)?, work).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn size_on_disk(&self) -> Result<Option<u64>, StoreError> {
        let meta = std::fs::metadata(&self.path)
            .map_err(|e| internal(format!("reading {}: {e}", self.path.display())))?;
        Ok(Some(meta.len()))
    }

    /// Answers what is queued, then stops the writer; later writes fail.
    async fn close(&self) -> Result<(), StoreError> {
        let writer = self.writer.clone();
        Self::blocking(move || {
            writer.stop();
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests;
