//! The store abstraction: a small document store shaped for what services need and what MongoDB,
//! FerretDB and an embedded database can all do atomically.
//!
//! Documents are JSON objects with a string `id`. A collection may declare unique fields. The
//! operations that race — a conditional update, an append to an array, a conditional delete — are
//! single atomic operations in every backend: the condition ([`Filter`]) is checked and the change
//! applied together, so of two racing writers exactly one sees [`Outcome::Done`]. Lists are ordered by
//! id; services make ids that sort by creation time ([`new_id`]), so pages are stable.
//!
//! Fields a collection declares `indexed` are indexed by every backend (with exact per-value
//! counts in the memory and embedded ones), so a filtered list costs its page, not the collection.
//! Reads can hand back the stored JSON bytes ([`Store::get_json`], [`Store::list_json`]) so a
//! service answers them without decoding and encoding again.
//!
//! Parts: `query` (filters, changes, pages, listings, outcomes; re-exported here), [`keys`] (index
//! keys and partial decoding), [`conformance`] (the checks every backend passes), and one module per
//! backend.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{Map, Value};

pub(crate) use query::admit;
pub use query::{Change, Cond, Filter, JsonListing, Listing, Outcome, Page};

use crate::http::ApiError;

mod query;

pub mod admission;
pub mod conformance;
pub mod keys;
pub mod memory;

#[cfg(feature = "embedded")]
pub mod embedded;

#[cfg(feature = "mongo")]
pub mod mongo;

/// A document: a JSON object whose `id` field is a string.
pub type Doc = Map<String, Value>;

/// A new opaque id that sorts by creation time (UUIDv7, 32 hex digits).
pub fn new_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// A collection's name and the fields the store must index.
#[derive(Debug, Clone, Copy)]
pub struct CollectionSpec {
    /// The collection's name.
    pub name: &'static str,
    /// Fields whose values must be unique across the collection (a clash is [`StoreError::Duplicate`]).
    pub unique: &'static [&'static str],
    /// Fields lists filter on, indexed where the backend has indexes.
    pub indexed: &'static [&'static str],
}

/// What can go wrong in a store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A unique field's value is taken.
    #[error("{field} {value} is already taken")]
    Duplicate {
        /// The unique field.
        field: String,
        /// The value, as JSON.
        value: String,
    },
    /// The store cannot be reached now (a database down, a timeout).
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Anything else.
    #[error("store failure: {0}")]
    Internal(String),
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::Duplicate { .. } => ApiError::conflict(e.to_string()),
            StoreError::Unavailable(_) => ApiError::unavailable(e.to_string()),
            StoreError::Internal(_) => ApiError::internal(e),
        }
    }
}

/// A document store. Every write returns only once it is durable in that backend.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The backend's name (`memory`, `embedded`, `mongo`).
    fn kind(&self) -> &'static str;

    /// Inserts `doc` (which carries its `id`); an id already stored is [`StoreError::Duplicate`] on
    /// the field `id`.
    async fn insert(&self, collection: &str, doc: Doc) -> Result<(), StoreError>;

    /// Inserts many documents, for bulk loading (`--preload`, the storage study). Backends that can
    /// write them in far fewer durable commits than one per document do; the default inserts one by
    /// one. All or a prefix of `docs` may be stored when it fails.
    async fn insert_many(&self, collection: &str, docs: Vec<Doc>) -> Result<(), StoreError> {
        for doc in docs {
            self.insert(collection, doc).await?;
        }
        Ok(())
    }

    /// The document with `id`, if any.
    async fn get(&self, collection: &str, id: &str) -> Result<Option<Doc>, StoreError>;

    /// The document with `id` as the JSON text of its object, if any: what a GET answers, without a
    /// decode and an encode in between. Backends that keep JSON bytes hand them back as stored; the
    /// default encodes what [`Store::get`] returns.
    async fn get_json(&self, collection: &str, id: &str) -> Result<Option<Bytes>, StoreError> {
        Ok(self
            .get(collection, id)
            .await?
            .as_ref()
            .map(keys::encode_doc))
    }

    /// The documents matching `filter`, ordered by id, paged.
    async fn list(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<Listing, StoreError>;

    /// The page of [`Store::list`] with each document as the JSON text of its object. Backends that
    /// keep JSON bytes hand them back as stored; the default encodes what [`Store::list`] returns.
    async fn list_json(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<JsonListing, StoreError> {
        Ok(self.list(collection, filter, page).await?.into())
    }

    /// Applies `change` to document `id` if it meets `expect`, atomically.
    async fn update(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
        change: &Change,
    ) -> Result<Outcome, StoreError>;

    /// Deletes document `id` if it meets `expect`, atomically; `Done` carries the deleted document.
    async fn delete(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
    ) -> Result<Outcome, StoreError>;

    /// Whether the store can be reached now.
    async fn ping(&self) -> Result<(), StoreError>;

    /// The bytes the store takes on disk now (`None` where it keeps nothing on disk or cannot say).
    async fn size_on_disk(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    /// Flushes and releases what the store holds; called once at shutdown.
    async fn close(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

impl fmt::Debug for dyn Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Store({})", self.kind())
    }
}

/// Which backend to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// Keeps nothing across restarts.
    Memory,
    /// The embedded redb database on disk (the default).
    Embedded,
    /// MongoDB (or a compatible server).
    Mongo,
}

impl StoreKind {
    /// The backends compiled into this binary.
    pub fn compiled() -> Vec<StoreKind> {
        let mut v = vec![StoreKind::Memory];
        if cfg!(feature = "embedded") {
            v.push(StoreKind::Embedded);
        }
        if cfg!(feature = "mongo") {
            v.push(StoreKind::Mongo);
        }
        v
    }

    /// The backend's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Memory => "memory",
            StoreKind::Embedded => "embedded",
            StoreKind::Mongo => "mongo",
        }
    }
}

impl std::str::FromStr for StoreKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "memory" => Ok(StoreKind::Memory),
            "embedded" => Ok(StoreKind::Embedded),
            "mongo" => Ok(StoreKind::Mongo),
            other => Err(format!(
                "unknown store {other:?}; expected memory, embedded or mongo"
            )),
        }
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a service's store lives.
#[derive(Debug, Clone, Default)]
pub struct StoreConfig {
    /// For `embedded`: the folder holding `<database>.redb`.
    pub data_dir: std::path::PathBuf,
    /// For `mongo`: the connection string.
    pub mongodb_uri: Option<String>,
    /// For `mongo`: the deadline of one operation, its wait for a turn and server selection
    /// included (zero: the backend's default).
    pub timeout: std::time::Duration,
    /// For `mongo`: how many reads are on the wire at once; the others wait in line, within
    /// their deadline (zero: the backend's default).
    pub concurrency: usize,
    /// For `mongo`: how many writes are on the wire at once, in a line of their own (zero: the
    /// backend's default).
    pub writers: usize,
    /// A cap on the store's own cache, bytes (`embedded`: redb's cache; `None`: the backend's
    /// default). The storage study sets it so that its data outgrows the cache, not the machine.
    pub cache_bytes: Option<u64>,
}

/// Opens the `kind` store for the database `database` (one per service) with its collections.
pub async fn open(
    kind: StoreKind,
    database: &str,
    collections: &[CollectionSpec],
    config: &StoreConfig,
) -> Result<Arc<dyn Store>, StoreError> {
    let _ = (database, config); // unused when only the memory backend is compiled in
    match kind {
        StoreKind::Memory => Ok(Arc::new(memory::MemoryStore::new(collections))),
        #[cfg(feature = "embedded")]
        StoreKind::Embedded => {
            let path = config.data_dir.join(format!("{database}.redb"));
            Ok(Arc::new(
                embedded::EmbeddedStore::open(&path, collections, config.cache_bytes).await?,
            ))
        }
        #[cfg(feature = "mongo")]
        StoreKind::Mongo => {
            let uri = config.mongodb_uri.as_deref().ok_or_else(|| {
                StoreError::Internal("--store mongo needs --mongodb-uri or MONGODB_URI".into())
            })?;
            let limits = mongo::MongoLimits {
                timeout: config.timeout,
                concurrency: config.concurrency,
                writers: config.writers,
            };
            Ok(Arc::new(
                mongo::MongoStore::connect_with(uri, database, collections, limits).await?,
            ))
        }
        #[allow(unreachable_patterns)]
        other => Err(StoreError::Internal(format!(
            "store {other} is not compiled into this binary"
        ))),
    }
}

/// The unique-key value of `doc` for `field` as a string key (its canonical JSON,
/// [`keys::index_key`]), if the field is set and not `null`.
pub fn unique_key(doc: &Doc, field: &str) -> Option<String> {
    doc.get(field).filter(|v| !v.is_null()).map(keys::index_key)
}

/// The document's id (empty if it has none, which the services never produce).
pub fn doc_id(doc: &Doc) -> &str {
    doc.get("id").and_then(Value::as_str).unwrap_or("")
}
