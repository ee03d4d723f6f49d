//! The MongoDB backend, on the official `mongodb` driver. It works against MongoDB 5+ and against
//! FerretDB v1 (a MongoDB-compatible server on SQLite or PostgreSQL), so it uses only what both
//! have: no transactions, no aggregation beyond counting, plain single and compound conditions.
//!
//! - One database per service (`brigade_waiter`, ...); a database named in the URI wins.
//! - Every racing change is one `findAndModify` whose filter carries the expected state (`$push`
//!   with `$each` for appends), so the server checks the condition and applies the change together:
//!   of racing writers exactly one matches. A miss is followed by a plain read of the id to tell
//!   [`Outcome::Missing`] from [`Outcome::Refused`].
//! - FerretDB v1 runs `findAndModify` as a read followed by a separate write by `_id`, so on its
//!   own it lets several racers win (measured: 2 to 8 of 20 to 50 racers). When the server says it is
//!   FerretDB (`buildInfo.ferretdbVersion`), the store therefore also serializes conditional writes
//!   to the same document inside the process (striped async locks). That restores "exactly one
//!   winner" for one service instance per database, which is Brigade's layout; several processes
//!   sharing one FerretDB database would not be protected. On MongoDB no lock is taken.
//! - Writes use the write concern `{j: true}` (unless the URI sets one): on a single node the write is
//!   in the journal before it is acknowledged. Replica sets should set `w=majority` in the URI.
//! - Every call is bounded by the configured timeout (server selection and the operation together);
//!   an unreachable server or a timeout is [`StoreError::Unavailable`], which the API answers 503.
//!   The driver keeps monitoring the server, so the store recovers by itself once it is back.
//! - Documents keep the API's JSON shapes: `id` is stored as the string `_id`, integers stay integers
//!   (stored as 64-bit), and values read back are plain JSON (no BSON types leak out).
//! - Each indexed field gets a compound index `{field: 1, _id: 1}`: it finds a value's documents
//!   already in the id order lists return, so a filtered page needs no sort and `countDocuments`
//!   on the field is answered from the index (on MongoDB; see docs/stores.md for FerretDB).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use async_trait::async_trait;
use futures::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::options::{ClientOptions, IndexOptions, ReturnDocument, WriteConcern};
use mongodb::{Client, Collection, Database, IndexModel};

use super::*;

mod convert;
mod errors;
pub mod server;

#[cfg(feature = "testing")]
pub mod testing;

use convert::{from_document, to_bson, to_document, to_query, to_update};
use errors::{classify, duplicate_of, failed_index, Written};

/// The timeout used when the configuration gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// The connection pool's size per service unless the URI sets `maxPoolSize`: enough for the
/// load tests' concurrent users without queueing on the driver's default of 10.
pub const DEFAULT_MAX_POOL_SIZE: u32 = 64;

/// How many locks conditional writes to the same document are striped over (FerretDB only).
const WRITE_LOCK_STRIPES: usize = 256;

/// The MongoDB store of one service.
pub struct MongoStore {
    client: Client,
    db: Database,
    specs: Vec<CollectionSpec>,
    timeout: Duration,
    /// Per-document write locks, only for servers whose `findAndModify` is not atomic (FerretDB v1).
    write_locks: Option<Vec<tokio::sync::Mutex<()>>>,
}

impl MongoStore {
    /// Connects to `uri`, uses the database `database` (unless the URI names one) and creates the
    /// collections' indexes. Fails with [`StoreError::Unavailable`] if the server cannot be reached
    /// within `timeout` (zero means [`DEFAULT_TIMEOUT`]).
    pub async fn connect(
        uri: &str,
        database: &str,
        collections: &[CollectionSpec],
        timeout: Duration,
    ) -> Result<MongoStore, StoreError> {
        let timeout = if timeout.is_zero() {
            DEFAULT_TIMEOUT
        } else {
            timeout
        };
        let mut options = ClientOptions::parse(uri)
            .await
            .map_err(|e| StoreError::Internal(format!("invalid MongoDB URI: {e}")))?;
        options
            .app_name
            .get_or_insert_with(|| "brigade".to_string());
        options.server_selection_timeout = Some(timeout);
        options.connect_timeout = Some(timeout);
        options.max_pool_size.get_or_insert(DEFAULT_MAX_POOL_SIZE);
        // "Acknowledged" should mean "survives a crash of this node": wait for the journal.
        options
            .write_concern
            .get_or_insert_with(|| WriteConcern::builder().journal(true).build());
        let database = options
            .default_database
            .clone()
            .unwrap_or_else(|| database.to_string());
        let client = Client::with_options(options)
            .map_err(|e| StoreError::Internal(format!("MongoDB client: {e}")))?;
        let db = client.database(&database);
        let mut store = MongoStore {
            client,
            db,
            specs: collections.to_vec(),
            timeout,
            write_locks: None,
        };
        let ferretdb = store.ferretdb_version().await?;
        if let Some(version) = &ferretdb {
            tracing::info!(
                database = %database,
                ferretdb = %version,
                "FerretDB detected: conditional writes are serialized per document in this process"
            );
            store.write_locks = Some(
                (0..WRITE_LOCK_STRIPES)
                    .map(|_| tokio::sync::Mutex::new(()))
                    .collect(),
            );
        }
        store.create_indexes().await?;
        tracing::debug!(database = %database, ferretdb = ?ferretdb, "MongoDB store ready");
        Ok(store)
    }

    /// Whether conditional writes are also serialized in this process (true on FerretDB).
    pub fn serializes_writes(&self) -> bool {
        self.write_locks.is_some()
    }

    /// FerretDB's version if the server is FerretDB (it adds `ferretdbVersion` to `buildInfo`).
    async fn ferretdb_version(&self) -> Result<Option<String>, StoreError> {
        let info = self
            .bounded(async {
                self.db
                    .run_command(doc! { "buildInfo": 1 })
                    .await
                    .map_err(|e| classify(e, None))
            })
            .await?;
        Ok(info.get_str("ferretdbVersion").ok().map(str::to_string))
    }

    /// The lock for document `id` of `collection`, where the server needs one.
    async fn lock_document(
        &self,
        collection: &str,
        id: &str,
    ) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        let locks = self.write_locks.as_ref()?;
        let mut h = DefaultHasher::new();
        (collection, id).hash(&mut h);
        Some(
            locks[(h.finish() % locks.len() as u64) as usize]
                .lock()
                .await,
        )
    }

    /// The name of the database this store uses.
    pub fn database_name(&self) -> &str {
        self.db.name()
    }

    /// Drops this store's database (tests use it to clean up after themselves).
    pub async fn drop_database(&self) -> Result<(), StoreError> {
        self.bounded(async { self.db.drop().await.map_err(|e| classify(e, None)) })
            .await
    }

    async fn create_indexes(&self) -> Result<(), StoreError> {
        for spec in &self.specs {
            let coll = self.coll(spec.name);
            for field in spec.unique {
                let model = IndexModel::builder()
                    .keys(doc! { *field: 1 })
                    .options(IndexOptions::builder().unique(true).build())
                    .build();
                self.bounded(async {
                    coll.create_index(model)
                        .await
                        .map(drop)
                        .map_err(|e| classify(e, None))
                })
                .await?;
            }
            for field in spec.indexed {
                let model = IndexModel::builder()
                    .keys(doc! { *field: 1, "_id": 1 })
                    .build();
                self.bounded(async {
                    coll.create_index(model)
                        .await
                        .map(drop)
                        .map_err(|e| classify(e, None))
                })
                .await?;
            }
        }
        Ok(())
    }

    fn spec(&self, collection: &str) -> Result<&CollectionSpec, StoreError> {
        self.specs
            .iter()
            .find(|s| s.name == collection)
            .ok_or_else(|| StoreError::Internal(format!("unknown collection {collection}")))
    }

    fn coll(&self, name: &str) -> Collection<Document> {
        self.db.collection(name)
    }

    /// Runs `op` within the store's timeout; running out of time is [`StoreError::Unavailable`].
    async fn bounded<T>(
        &self,
        op: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, op).await {
            Ok(result) => result,
            Err(_) => Err(StoreError::Unavailable(format!(
                "MongoDB did not answer within {:?}",
                self.timeout
            ))),
        }
    }

    /// Fills in the field of a duplicate the server did not name (FerretDB's insert errors name no
    /// index): the id if an insert's id is taken, else the first of the written unique fields held
    /// by another document than `id`. Any other error passes through.
    async fn name_duplicate(
        &self,
        coll: &Collection<Document>,
        spec: &CollectionSpec,
        id: &str,
        written: &Doc,
        error: StoreError,
    ) -> StoreError {
        if !matches!(&error, StoreError::Duplicate { field, .. } if field.is_empty()) {
            return error;
        }
        // An insert writes the id; an update does not (its own id exists, of course).
        if written.contains_key("id")
            && matches!(coll.find_one(doc! { "_id": id }).await, Ok(Some(_)))
        {
            return StoreError::Duplicate {
                field: "id".into(),
                value: Value::from(id).to_string(),
            };
        }
        for field in spec
            .unique
            .iter()
            .filter(|f| written.get(**f).is_some_and(|v| !v.is_null()))
        {
            let holder =
                doc! { *field: { "$eq": to_bson(&written[*field]) }, "_id": { "$ne": id } };
            if matches!(coll.find_one(holder).await, Ok(Some(_))) {
                return duplicate_of(field, written);
            }
        }
        let field = spec
            .unique
            .iter()
            .find(|f| written.contains_key(**f))
            .or(spec.unique.first());
        match field {
            Some(f) => duplicate_of(f, written),
            None => StoreError::Duplicate {
                field: "id".into(),
                value: Value::from(id).to_string(),
            },
        }
    }

    /// After a conditional operation matched nothing: `Missing` or `Refused` with the document as it is.
    async fn missing_or_refused(
        &self,
        coll: &Collection<Document>,
        id: &str,
    ) -> Result<Outcome, StoreError> {
        match coll
            .find_one(doc! { "_id": id })
            .await
            .map_err(|e| classify(e, None))?
        {
            Some(found) => Ok(Outcome::Refused(from_document(found))),
            None => Ok(Outcome::Missing),
        }
    }
}

#[async_trait]
impl Store for MongoStore {
    fn kind(&self) -> &'static str {
        "mongo"
    }

    async fn insert(&self, collection: &str, doc: Doc) -> Result<(), StoreError> {
        let spec = self.spec(collection)?;
        if doc_id(&doc).is_empty() {
            return Err(StoreError::Internal("a document needs a string id".into()));
        }
        let coll = self.coll(collection);
        let document = to_document(&doc);
        self.bounded(async {
            match coll.insert_one(document).await {
                Ok(_) => Ok(()),
                Err(e) => {
                    let error = classify(e, Some(Written { spec, doc: &doc }));
                    Err(self
                        .name_duplicate(&coll, spec, doc_id(&doc), &doc, error)
                        .await)
                }
            }
        })
        .await
    }

    /// One ordered `insertMany` (so a failure leaves a prefix stored, as the trait allows).
    async fn insert_many(&self, collection: &str, docs: Vec<Doc>) -> Result<(), StoreError> {
        let spec = self.spec(collection)?;
        if docs.iter().any(|d| doc_id(d).is_empty()) {
            return Err(StoreError::Internal("a document needs a string id".into()));
        }
        if docs.is_empty() {
            return Ok(());
        }
        let coll = self.coll(collection);
        let documents: Vec<Document> = docs.iter().map(to_document).collect();
        // A bulk load may take longer than one operation's timeout: allow a second per 1,000.
        let allowance = self.timeout + Duration::from_millis(docs.len() as u64);
        let op = async {
            match coll.insert_many(documents).ordered(true).await {
                Ok(_) => Ok(()),
                Err(e) => {
                    // The first failed document is the one to name; ordered, it is the last tried.
                    let index = failed_index(&e).unwrap_or(0).min(docs.len() - 1);
                    let doc = &docs[index];
                    let error = classify(e, Some(Written { spec, doc }));
                    Err(self
                        .name_duplicate(&coll, spec, doc_id(doc), doc, error)
                        .await)
                }
            }
        };
        match tokio::time::timeout(allowance, op).await {
            Ok(result) => result,
            Err(_) => Err(StoreError::Unavailable(format!(
                "MongoDB did not store {} documents within {allowance:?}",
                docs.len()
            ))),
        }
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Doc>, StoreError> {
        self.spec(collection)?;
        let coll = self.coll(collection);
        self.bounded(async {
            let found = coll
                .find_one(doc! { "_id": id })
                .await
                .map_err(|e| classify(e, None))?;
            Ok(found.map(from_document))
        })
        .await
    }

    async fn list(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<Listing, StoreError> {
        self.spec(collection)?;
        let coll = self.coll(collection);
        let query = to_query(None, filter);
        self.bounded(async {
            let total = coll
                .count_documents(query.clone())
                .await
                .map_err(|e| classify(e, None))?;
            let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
            let items: Vec<Document> = if limit == 0 {
                Vec::new()
            } else {
                coll.find(query)
                    .sort(doc! { "_id": 1 })
                    .skip(page.offset)
                    .limit(limit)
                    .await
                    .map_err(|e| classify(e, None))?
                    .try_collect()
                    .await
                    .map_err(|e| classify(e, None))?
            };
            Ok(Listing {
                items: items.into_iter().map(from_document).collect(),
                total,
            })
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
        let spec = self.spec(collection)?;
        if change.set.iter().any(|(k, _)| k == "id") {
            return Err(StoreError::Internal("a document's id cannot change".into()));
        }
        let coll = self.coll(collection);
        let query = to_query(Some(id), expect);
        if change.set.is_empty() && change.push.is_empty() {
            // Nothing to change: the outcome is whether the condition holds now.
            return self
                .bounded(async {
                    match coll.find_one(query).await.map_err(|e| classify(e, None))? {
                        Some(found) => Ok(Outcome::Done(from_document(found))),
                        None => self.missing_or_refused(&coll, id).await,
                    }
                })
                .await;
        }
        let update = to_update(change);
        let written: Doc = change.set.iter().cloned().collect();
        self.bounded(async {
            let _guard = self.lock_document(collection, id).await;
            let after = match coll
                .find_one_and_update(query, update)
                .return_document(ReturnDocument::After)
                .await
            {
                Ok(after) => after,
                Err(e) => {
                    let error = classify(
                        e,
                        Some(Written {
                            spec,
                            doc: &written,
                        }),
                    );
                    return Err(self.name_duplicate(&coll, spec, id, &written, error).await);
                }
            };
            match after {
                Some(found) => Ok(Outcome::Done(from_document(found))),
                None => self.missing_or_refused(&coll, id).await,
            }
        })
        .await
    }

    async fn delete(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
    ) -> Result<Outcome, StoreError> {
        self.spec(collection)?;
        let coll = self.coll(collection);
        let query = to_query(Some(id), expect);
        self.bounded(async {
            let _guard = self.lock_document(collection, id).await;
            match coll
                .find_one_and_delete(query)
                .await
                .map_err(|e| classify(e, None))?
            {
                Some(gone) => Ok(Outcome::Done(from_document(gone))),
                None => self.missing_or_refused(&coll, id).await,
            }
        })
        .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.bounded(async {
            self.db
                .run_command(doc! { "ping": 1 })
                .await
                .map(drop)
                .map_err(|e| classify(e, None))
        })
        .await
    }

    /// `dbStats`' `storageSize` plus `indexSize`: the bytes the database's collections and indexes
    /// take in the storage engine (MongoDB's WiredTiger; FerretDB reports its SQLite tables' sizes
    /// under the same names).
    async fn size_on_disk(&self) -> Result<Option<u64>, StoreError> {
        let stats = self
            .bounded(async {
                self.db
                    .run_command(doc! { "dbStats": 1, "scale": 1 })
                    .await
                    .map_err(|e| classify(e, None))
            })
            .await?;
        let number = |k: &str| -> Option<u64> {
            match stats.get(k)? {
                mongodb::bson::Bson::Int32(n) => u64::try_from(*n).ok(),
                mongodb::bson::Bson::Int64(n) => u64::try_from(*n).ok(),
                mongodb::bson::Bson::Double(f) if *f >= 0.0 => Some(*f as u64),
                _ => None,
            }
        };
        let storage = number("storageSize").or_else(|| number("dataSize"));
        Ok(storage.map(|s| s + number("indexSize").unwrap_or(0)))
    }

    async fn close(&self) -> Result<(), StoreError> {
        // `immediate`: don't wait for handles held elsewhere (in-flight requests of other clones).
        let _ = tokio::time::timeout(self.timeout, self.client.clone().shutdown().immediate(true))
            .await;
        Ok(())
    }
}
