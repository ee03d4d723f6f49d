//! The store abstraction: a small document store shaped for what services need and what MongoDB,
//! FerretDB and an embedded database can all do atomically.
//!
//! Documents are JSON objects with a string `id`. A collection may declare unique fields. The
//! operations that race — a conditional update, an append to an array, a conditional delete — are
//! single atomic operations in every backend: the condition ([`Filter`]) is checked and the change
//! applied together, so of two racing writers exactly one sees [`Outcome::Done`]. Lists are ordered by
//! id; services make ids that sort by creation time ([`new_id`]), so pages are stable.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::http::ApiError;

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

/// A condition on one field.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// The field equals the value.
    Eq(Value),
    /// The field equals one of the values.
    In(Vec<Value>),
}

/// A conjunction of field conditions; the empty filter matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter(pub Vec<(String, Cond)>);

impl Filter {
    /// The empty filter.
    pub fn all() -> Filter {
        Filter::default()
    }

    /// Adds `field == value`.
    pub fn eq(mut self, field: &str, value: impl Into<Value>) -> Filter {
        self.0.push((field.to_string(), Cond::Eq(value.into())));
        self
    }

    /// Adds `field in values`.
    pub fn one_of(
        mut self,
        field: &str,
        values: impl IntoIterator<Item = impl Into<Value>>,
    ) -> Filter {
        self.0.push((
            field.to_string(),
            Cond::In(values.into_iter().map(Into::into).collect()),
        ));
        self
    }

    /// Whether `doc` meets every condition (missing fields are `null`).
    pub fn matches(&self, doc: &Doc) -> bool {
        self.0.iter().all(|(field, cond)| {
            let v = doc.get(field).unwrap_or(&Value::Null);
            match cond {
                Cond::Eq(want) => v == want,
                Cond::In(wants) => wants.iter().any(|w| w == v),
            }
        })
    }
}

/// A change to one document: fields to set, then values to append to array fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    /// Fields to set.
    pub set: Vec<(String, Value)>,
    /// Values appended, in order, to each named array field.
    pub push: Vec<(String, Vec<Value>)>,
}

impl Change {
    /// Adds `field = value`.
    pub fn set(mut self, field: &str, value: impl Into<Value>) -> Change {
        self.set.push((field.to_string(), value.into()));
        self
    }

    /// Adds an append of `values` to the array `field`.
    pub fn push(mut self, field: &str, values: Vec<Value>) -> Change {
        self.push.push((field.to_string(), values));
        self
    }

    /// Applies the change to `doc` in place (shared by the backends that change documents themselves).
    pub fn apply(&self, doc: &mut Doc) {
        for (k, v) in &self.set {
            doc.insert(k.clone(), v.clone());
        }
        for (k, vs) in &self.push {
            let slot = doc
                .entry(k.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            if let Value::Array(a) = slot {
                a.extend(vs.iter().cloned());
            }
        }
    }
}

/// Which slice of a list to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Documents skipped.
    pub offset: u64,
    /// Documents returned at most.
    pub limit: u64,
}

/// A page of documents and how many match in all.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// The documents of the page, ordered by id.
    pub items: Vec<Doc>,
    /// How many documents match the filter in all.
    pub total: u64,
}

/// The result of a conditional update or delete.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The condition held and the change was made; for an update, the document after it.
    Done(Doc),
    /// No document has that id.
    Missing,
    /// The document exists but the condition did not hold; it is returned as it is.
    Refused(Doc),
}

/// The first step of every conditional change a backend applies itself (memory, embedded): the
/// document must exist (else [`Outcome::Missing`]) and meet `expect` (else [`Outcome::Refused`] with
/// the document as it is). Returns the document to change when the change may go ahead.
pub(crate) fn admit(current: Option<Doc>, expect: &Filter) -> Result<Doc, Outcome> {
    match current {
        None => Err(Outcome::Missing),
        Some(doc) if !expect.matches(&doc) => Err(Outcome::Refused(doc)),
        Some(doc) => Ok(doc),
    }
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

    /// Inserts `doc` (which carries its `id`).
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

    /// The documents matching `filter`, ordered by id, paged.
    async fn list(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<Listing, StoreError>;

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
    /// For `mongo`: the operation and server-selection timeout.
    pub timeout: std::time::Duration,
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
            Ok(Arc::new(
                mongo::MongoStore::connect(uri, database, collections, config.timeout).await?,
            ))
        }
        #[allow(unreachable_patterns)]
        other => Err(StoreError::Internal(format!(
            "store {other} is not compiled into this binary"
        ))),
    }
}

/// The unique-key value of `doc` for `field` as a string key (its JSON), if the field is set.
pub fn unique_key(doc: &Doc, field: &str) -> Option<String> {
    doc.get(field)
        .filter(|v| !v.is_null())
        .map(|v| v.to_string())
}

/// The document's id (empty if it has none, which the services never produce).
pub fn doc_id(doc: &Doc) -> &str {
    doc.get("id").and_then(Value::as_str).unwrap_or("")
}

/// The conformance checks every backend passes: atomic conditions, unique keys, paging, appends.
/// Backends' own tests call it with a fresh store.
pub mod conformance {
    use super::*;
    use serde_json::json;

    /// The collection the checks use.
    pub const SPEC: CollectionSpec = CollectionSpec {
        name: "things",
        unique: &["number"],
        indexed: &["state"],
    };

    fn doc(v: Value) -> Doc {
        v.as_object().cloned().expect("an object")
    }

    /// Runs every check against `store`, which must have been opened with [`SPEC`] and be empty.
    pub async fn run(store: Arc<dyn Store>) {
        let c = SPEC.name;
        let a = new_id();
        let b = new_id();
        store
            .insert(
                c,
                doc(json!({"id": a, "number": 1, "state": "free", "log": []})),
            )
            .await
            .unwrap();
        store
            .insert(
                c,
                doc(json!({"id": b, "number": 2, "state": "busy", "log": []})),
            )
            .await
            .unwrap();

        // Unique keys.
        let dup = store
            .insert(
                c,
                doc(json!({"id": new_id(), "number": 1, "state": "free"})),
            )
            .await;
        assert!(matches!(dup, Err(StoreError::Duplicate { .. })), "{dup:?}");

        // Get and operator-looking ids.
        assert_eq!(store.get(c, &a).await.unwrap().unwrap()["number"], json!(1));
        assert_eq!(store.get(c, "$gt").await.unwrap(), None);
        assert_eq!(store.get(c, "{\"$ne\":1}").await.unwrap(), None);

        // Lists: order, filter, paging, totals.
        let all = store
            .list(
                c,
                &Filter::all(),
                Page {
                    offset: 0,
                    limit: 10,
                },
            )
            .await
            .unwrap();
        assert_eq!(all.total, 2);
        assert_eq!(doc_id(&all.items[0]), a);
        let busy = store
            .list(
                c,
                &Filter::all().eq("state", "busy"),
                Page {
                    offset: 0,
                    limit: 10,
                },
            )
            .await
            .unwrap();
        assert_eq!((busy.total, doc_id(&busy.items[0])), (1, b.as_str()));
        let second = store
            .list(
                c,
                &Filter::all(),
                Page {
                    offset: 1,
                    limit: 1,
                },
            )
            .await
            .unwrap();
        assert_eq!(
            (second.total, second.items.len(), doc_id(&second.items[0])),
            (2, 1, b.as_str())
        );
        let either = store
            .list(
                c,
                &Filter::all().one_of("state", ["free", "busy"]),
                Page {
                    offset: 0,
                    limit: 10,
                },
            )
            .await
            .unwrap();
        assert_eq!(either.total, 2);

        // Conditional update: exactly one of many racing writers wins.
        let mut racers = Vec::new();
        for i in 0..20 {
            let s = store.clone();
            let id = a.clone();
            racers.push(tokio::spawn(async move {
                s.update(
                    c,
                    &id,
                    &Filter::all().eq("state", "free"),
                    &Change::default().set("state", "busy").set("by", i),
                )
                .await
                .unwrap()
            }));
        }
        let mut wins = 0;
        for r in racers {
            match r.await.unwrap() {
                Outcome::Done(d) => {
                    wins += 1;
                    assert_eq!(d["state"], json!("busy"));
                }
                Outcome::Refused(d) => assert_eq!(d["state"], json!("busy")),
                Outcome::Missing => panic!("document vanished"),
            }
        }
        assert_eq!(wins, 1);
        let missing = store
            .update(c, "nope", &Filter::all(), &Change::default().set("x", 1))
            .await
            .unwrap();
        assert_eq!(missing, Outcome::Missing);

        // Appends keep every value, in order.
        for n in 0..5 {
            store
                .update(
                    c,
                    &b,
                    &Filter::all(),
                    &Change::default().push("log", vec![json!(n)]),
                )
                .await
                .unwrap();
        }
        let grown = store.get(c, &b).await.unwrap().unwrap();
        assert_eq!(grown["log"], json!([0, 1, 2, 3, 4]));

        // A unique field may not be changed onto a taken value.
        let clash = store
            .update(c, &b, &Filter::all(), &Change::default().set("number", 1))
            .await;
        assert!(
            matches!(clash, Err(StoreError::Duplicate { .. })),
            "{clash:?}"
        );

        // Conditional delete, and the freed unique value is usable again.
        let refused = store
            .delete(c, &a, &Filter::all().eq("state", "free"))
            .await
            .unwrap();
        assert!(matches!(refused, Outcome::Refused(_)));
        let done = store
            .delete(c, &a, &Filter::all().eq("state", "busy"))
            .await
            .unwrap();
        assert!(matches!(done, Outcome::Done(_)));
        assert_eq!(
            store.delete(c, &a, &Filter::all()).await.unwrap(),
            Outcome::Missing
        );
        store
            .insert(
                c,
                doc(json!({"id": new_id(), "number": 1, "state": "free"})),
            )
            .await
            .unwrap();
        store.ping().await.unwrap();
    }
}
