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
//! - Every call waits its turn in a bounded first-come-first-served line
//!   ([`Admission`](super::admission::Admission): at most `concurrency` operations on the wire,
//!   [`DEFAULT_CONCURRENCY`] unless configured) and is
//!   bounded by the configured deadline, the wait in line, server selection and the operation
//!   together, shortened to the caller's budget when the request carries one
//!   ([`crate::deadline`]). Running out of time is [`StoreError::Unavailable`], which the API
//!   answers 503. The driver keeps monitoring the server, so the store recovers by itself once it
//!   is back.
//! - The driver runs on the runtime that serves the request (`clients.rs`): one client per tokio
//!   runtime that calls the store, made there the first time it does, so the client's pool worker,
//!   its sockets and the operation itself are all driven by the serving thread, and an operation
//!   runs in the request's own task with no thread crossing of its own. Chosen over one client per
//!   thread because a multi-thread runtime's workers share one reactor (one pool serves them all,
//!   today's size) and a current-thread runtime is one thread anyway; over the hand-over to a
//!   driver thread (what came before: two cross-thread wake-ups per operation, most of Brigade's
//!   CPU per request on this store) because nothing is handed over. A caller on a thread that
//!   does not run a tokio runtime's tasks still hands its operation over, once there and once
//!   back: to the runtime it entered (ntex on io_uring enters one for the kit), or with no tokio
//!   runtime at all to the store's own driver thread. The lines, locks and deadlines (`gate.rs`)
//!   are one per store, shared by every runtime's client. An operation whose caller stopped
//!   waiting finishes on its runtime, in its slot, so its connection goes back to the pool instead
//!   of being closed mid-answer.
//! - Documents travel as raw BSON (`convert.rs`): a read is written from the driver's bytes
//!   straight into the JSON the API answers, a write encoded from JSON straight into the bytes sent.
//! - A list counts only when its page cannot tell the total ([`Page::total_from`]): a short page
//!   is the last one, so `countDocuments` runs only behind a full page or an empty one past the
//!   start.
//! - Documents keep the API's JSON shapes: `id` is stored as the string `_id`, integers stay integers
//!   (stored as 64-bit), and values read back are plain JSON (no BSON types leak out).
//! - Each indexed field gets a compound index `{field: 1, _id: 1}`: it finds a value's documents
//!   already in the id order lists return, so a filtered page needs no sort and `countDocuments`
//!   on the field is answered from the index (on MongoDB; see docs/stores.md for FerretDB).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mongodb::bson::{doc, Document, RawDocument, RawDocumentBuf};
use mongodb::options::{ClientOptions, IndexOptions, ReturnDocument, WriteConcern};
use mongodb::{Collection, IndexModel};

use super::*;

mod clients;
mod convert;
mod errors;
mod gate;
pub mod server;

#[cfg(feature = "testing")]
pub mod testing;

use convert::{raw_to_doc, to_bson, to_query, to_raw, to_update, write_json};
use clients::{Clients, Route};
use errors::{classify, duplicate_of, failed_index, Written};
use gate::{Gate, Line};

/// The deadline used when the configuration gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// How many reads a service has on the wire at once unless configured (`--store-concurrency`):
/// what FerretDB on SQLite answers fastest with on a small machine (measured in docs/stores.md;
/// more only makes every operation wait on the others inside the server); the rest wait in line,
/// within their deadline.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// How many writes a service has on the wire at once on FerretDB unless configured
/// (`--store-writers`): SQLite writes one transaction at a time per database file, and a writer
/// that finds the file locked sleeps and retries (its busy handler), so later writers can pass
/// earlier ones and the unlucky ones wait for seconds. One writer at a time, the others in line in
/// Brigade, keeps the order fair. On MongoDB writes take as many places as reads.
pub const DEFAULT_FERRETDB_WRITERS: usize = 1;

/// How a [`MongoStore`] bounds its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MongoLimits {
    /// The deadline of one call: the wait in line, server selection and the operation together
    /// (zero: [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// Reads on the wire at once; the others wait in line (zero: [`DEFAULT_CONCURRENCY`]).
    pub concurrency: usize,
    /// Writes on the wire at once, in a line of their own (zero: [`DEFAULT_FERRETDB_WRITERS`] on
    /// FerretDB, `concurrency` on MongoDB). Each runtime's connection pool is sized to both lines
    /// (unless the URI sets `maxPoolSize`) and a serving runtime's kept warm (`minPoolSize`: all
    /// of it on a multi-thread runtime, its share on a current-thread one), so no operation waits
    /// for a connection to be made once its runtime has called the store.
    pub writers: usize,
}

impl MongoLimits {
    /// `timeout`, and the default lines.
    pub fn with_timeout(timeout: Duration) -> MongoLimits {
        MongoLimits {
            timeout,
            concurrency: 0,
            writers: 0,
        }
    }

    /// The limits with the defaults filled in (but the writers', which depend on the server).
    pub fn resolved(self) -> MongoLimits {
        MongoLimits {
            timeout: if self.timeout.is_zero() {
                DEFAULT_TIMEOUT
            } else {
                self.timeout
            },
            concurrency: if self.concurrency == 0 {
                DEFAULT_CONCURRENCY
            } else {
                self.concurrency
            },
            writers: self.writers,
        }
    }

    /// The writers' line on a server that is (or is not) FerretDB.
    pub fn writers_on(&self, ferretdb: bool) -> usize {
        match self.writers {
            0 if ferretdb => DEFAULT_FERRETDB_WRITERS,
            0 => self.resolved().concurrency,
            n => n,
        }
    }
}

/// The MongoDB backend's registry entry (feature `mongo`).
pub(crate) const BACKEND: Backend = Backend {
    name: "mongo",
    about: "MongoDB or FerretDB at --mongodb-uri, one database per service",
    durable: true,
    needs_uri: true,
    open,
};

/// Connects to the database `database` of the server at `config.mongodb_uri`.
fn open<'a>(
    database: &'a str,
    collections: &'a [CollectionSpec],
    config: &'a StoreConfig,
) -> BoxFuture<'a, Result<Arc<dyn Store>, StoreError>> {
    Box::pin(async move {
        let uri = config.mongodb_uri.as_deref().ok_or_else(|| {
            StoreError::Internal("--store mongo needs --mongodb-uri or MONGODB_URI".into())
        })?;
        let limits = MongoLimits {
            timeout: config.timeout,
            concurrency: config.concurrency,
            writers: config.writers,
        };
        let store = MongoStore::connect_with(uri, database, collections, limits).await?;
        Ok(Arc::new(store) as Arc<dyn Store>)
    })
}

/// The MongoDB store of one service.
pub struct MongoStore {
    /// The driver's clients, one per runtime that calls the store.
    clients: Clients,
    specs: Vec<CollectionSpec>,
    /// The lines and locks every operation passes, whichever runtime it runs on.
    gate: Arc<Gate>,
    /// Operations handed over to another thread's runtime (their caller's thread runs no tokio
    /// runtime's tasks).
    handed_over: AtomicU64,
}

/// A stored document as the JSON text the API answers.
fn json_bytes(raw: &RawDocument) -> Result<Bytes, StoreError> {
    // The JSON is about as long as the BSON (field names and strings alike, numbers shorter).
    let mut out = Vec::with_capacity(raw.as_bytes().len() + 16);
    write_json(raw, &mut out)?;
    Ok(Bytes::from(out))
}

impl MongoStore {
    /// Connects to `uri`, uses the database `database` (unless the URI names one) and creates the
    /// collections' indexes. Fails with [`StoreError::Unavailable`] if the server cannot be reached
    /// within `timeout` (zero means [`DEFAULT_TIMEOUT`]); the default lines.
    pub async fn connect(
        uri: &str,
        database: &str,
        collections: &[CollectionSpec],
        timeout: Duration,
    ) -> Result<MongoStore, StoreError> {
        Self::connect_with(
            uri,
            database,
            collections,
            MongoLimits::with_timeout(timeout),
        )
        .await
    }

    /// [`MongoStore::connect`] with its deadline and lines set by `limits`.
    pub async fn connect_with(
        uri: &str,
        database: &str,
        collections: &[CollectionSpec],
        limits: MongoLimits,
    ) -> Result<MongoStore, StoreError> {
        let options = ClientOptions::parse(uri)
            .await
            .map_err(|e| StoreError::Internal(format!("invalid MongoDB URI: {e}")))?;
        Self::connect_with_options(options, database, collections, limits).await
    }

    /// [`MongoStore::connect_with`] from the driver's options as given (an embedder's monitoring
    /// or TLS settings, say); the store fills in its deadlines, pool and write concern where the
    /// options leave them unset.
    pub async fn connect_with_options(
        mut options: ClientOptions,
        database: &str,
        collections: &[CollectionSpec],
        limits: MongoLimits,
    ) -> Result<MongoStore, StoreError> {
        let limits = limits.resolved();
        let timeout = limits.timeout;
        options
            .app_name
            .get_or_insert_with(|| "brigade".to_string());
        options.server_selection_timeout = Some(timeout);
        options.connect_timeout = Some(timeout);
        // Up to one connection per place in the lines (the writers' line is known only once the
        // server has said what it is; the larger is taken) on each runtime's client, the serving
        // runtimes' made in the background and kept ([`Clients::warm_pool`]): no operation waits
        // for a connection once its runtime's pool is warm, none is made and dropped as the load
        // comes and goes.
        let places = limits.concurrency + limits.writers_on(false).max(limits.writers_on(true));
        let places = u32::try_from(places).unwrap_or(u32::MAX);
        let max_pool = *options.max_pool_size.get_or_insert(places);
        // "Acknowledged" should mean "survives a crash of this node": wait for the journal.
        options
            .write_concern
            .get_or_insert_with(|| WriteConcern::builder().journal(true).build());
        let database = options
            .default_database
            .clone()
            .unwrap_or_else(|| database.to_string());
        let clients = Clients::new(options, places.min(max_pool), database.clone(), collections);
        let mut store = MongoStore {
            clients,
            specs: collections.to_vec(),
            gate: Arc::new(Gate::new(
                timeout,
                limits.concurrency,
                limits.writers_on(false),
            )),
            handed_over: AtomicU64::new(0),
        };
        let ferretdb = store.ferretdb_version().await?;
        if let Some(version) = &ferretdb {
            tracing::info!(
                database = %database,
                ferretdb = %version,
                "FerretDB detected: conditional writes are serialized per document in this process"
            );
            store.gate = Arc::new(
                Gate::new(timeout, limits.concurrency, limits.writers_on(true)).with_write_locks(),
            );
        }
        store.create_indexes().await?;
        tracing::debug!(database = %database, ferretdb = ?ferretdb, "MongoDB store ready");
        Ok(store)
    }

    /// Whether conditional writes are also serialized in this process (true on FerretDB).
    pub fn serializes_writes(&self) -> bool {
        self.gate.locks_writes()
    }

    /// How many reads and how many writes this store has on the wire at once at most.
    pub fn concurrency(&self) -> (usize, usize) {
        (self.gate.reads.size(), self.gate.writes.size())
    }

    /// How many driver clients the store holds: one per runtime that has called it and still runs
    /// (and one on the driver's thread once a caller without a runtime has come).
    pub fn clients(&self) -> usize {
        self.clients.count()
    }

    /// How many operations were handed over, whole, to a task of another thread's runtime because
    /// their caller's thread runs no tokio runtime's tasks (it only entered one, or has none);
    /// every other operation ran in its caller's task.
    pub fn handed_over(&self) -> u64 {
        self.handed_over.load(Ordering::Relaxed)
    }

    /// FerretDB's version if the server is FerretDB (it adds `ferretdbVersion` to `buildInfo`).
    async fn ferretdb_version(&self) -> Result<Option<String>, StoreError> {
        let (client, route) = self.clients.here().await?;
        let db = client.db.clone();
        let info = self
            .read(route, async move {
                db.run_command(doc! { "buildInfo": 1 })
                    .await
                    .map_err(|e| classify(e, None))
            })
            .await?;
        Ok(info.get_str("ferretdbVersion").ok().map(str::to_string))
    }

    /// The name of the database this store uses.
    pub fn database_name(&self) -> &str {
        self.clients.database()
    }

    /// Drops this store's database (tests use it to clean up after themselves).
    pub async fn drop_database(&self) -> Result<(), StoreError> {
        let (client, route) = self.clients.here().await?;
        let db = client.db.clone();
        self.write(route, async move {
            db.drop().await.map_err(|e| classify(e, None))
        })
        .await
    }

    async fn create_indexes(&self) -> Result<(), StoreError> {
        let (client, route) = self.clients.here().await?;
        for (spec, coll) in self.specs.iter().zip(&client.collections) {
            let unique = spec.unique.iter().map(|field| {
                IndexModel::builder()
                    .keys(doc! { *field: 1 })
                    .options(IndexOptions::builder().unique(true).build())
                    .build()
            });
            let indexed = spec.indexed.iter().map(|field| {
                IndexModel::builder()
                    .keys(doc! { *field: 1, "_id": 1 })
                    .build()
            });
            for model in unique.chain(indexed) {
                let coll = coll.clone();
                self.write(route.clone(), async move {
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

    /// The spec of `collection`, its handle on the calling runtime's client and where its
    /// operations run.
    async fn spec(
        &self,
        collection: &str,
    ) -> Result<(CollectionSpec, Collection<RawDocumentBuf>, Route), StoreError> {
        let i = self
            .specs
            .iter()
            .position(|s| s.name == collection)
            .ok_or_else(|| StoreError::Internal(format!("unknown collection {collection}")))?;
        let (client, route) = self.clients.here().await?;
        Ok((self.specs[i], client.collections[i].clone(), route))
    }

    /// Runs the read `op` in its turn, within the store's deadline (the wait included) or the
    /// caller's budget if it has less left; running out of time is [`StoreError::Unavailable`].
    async fn read<T: Send + 'static>(
        &self,
        route: Route,
        op: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.pass(route, Line::Reads, self.gate.timeout, None, op)
            .await
    }

    /// [`MongoStore::read`] for the write `op`, in the writers' line.
    async fn write<T: Send + 'static>(
        &self,
        route: Route,
        op: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.pass(route, Line::Writes, self.gate.timeout, None, op)
            .await
    }

    /// [`MongoStore::write`] for a conditional write to document `id`: on FerretDB it first waits
    /// for the document's lock (within the same deadline), then for its turn.
    async fn locked_write<T: Send + 'static>(
        &self,
        route: Route,
        collection: &str,
        id: &str,
        op: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let doc = Some((collection, id));
        self.pass(route, Line::Writes, self.gate.timeout, doc, op)
            .await
    }

    /// Runs `op` through the [`Gate`]: here, in the calling task on its runtime's client, or on the
    /// driver's thread when the caller has no runtime (the caller's budget goes with it).
    async fn pass<T: Send + 'static>(
        &self,
        route: Route,
        line: Line,
        limit: Duration,
        doc: Option<(&str, &str)>,
        op: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let runtime = match route {
            Route::Here => return self.gate.pass(line, limit, doc, op).await,
            Route::HandedOver(runtime) => runtime,
        };
        self.handed_over.fetch_add(1, Ordering::Relaxed);
        let gate = self.gate.clone();
        let doc = doc.map(|(c, id)| (c.to_string(), id.to_string()));
        let budget = crate::deadline::remaining();
        let job = runtime.spawn(crate::deadline::scope(budget, async move {
            let doc = doc.as_ref().map(|(c, id)| (c.as_str(), id.as_str()));
            gate.pass(line, limit, doc, op).await
        }));
        job.await.map_err(|e| {
            StoreError::Internal(format!("a MongoDB operation handed over failed: {e}"))
        })?
    }
}

/// The page of `coll` matching `query`, each document made by `each`, and the total: counted only
/// when the page cannot tell it ([`Page::total_from`]).
async fn page<T>(
    coll: Collection<RawDocumentBuf>,
    query: Document,
    page: Page,
    each: fn(&RawDocument) -> Result<T, StoreError>,
) -> Result<(Vec<T>, u64), StoreError> {
    let mut items = Vec::new();
    if page.limit > 0 {
        let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
        let mut cursor = coll
            .find(query.clone())
            .sort(doc! { "_id": 1 })
            .skip(page.offset)
            .limit(limit)
            .await
            .map_err(|e| classify(e, None))?;
        while cursor.advance().await.map_err(|e| classify(e, None))? {
            items.push(each(cursor.current())?);
        }
    }
    let total = match page.total_from(items.len()) {
        Some(total) => total,
        None => {
            let counted = coll
                .count_documents(query)
                .await
                .map_err(|e| classify(e, None))?;
            // Documents inserted between the page and the count move it, never below the page.
            let seen = if items.is_empty() {
                0
            } else {
                page.offset.saturating_add(items.len() as u64)
            };
            counted.max(seen)
        }
    };
    Ok((items, total))
}

/// Fills in the field of a duplicate the server did not name (FerretDB's insert errors name no
/// index): the id if an insert's id is taken, else the first of the written unique fields held by
/// another document than `id`. Any other error passes through.
async fn name_duplicate(
    coll: &Collection<RawDocumentBuf>,
    spec: &CollectionSpec,
    id: &str,
    written: &Doc,
    error: StoreError,
) -> StoreError {
    if !matches!(&error, StoreError::Duplicate { field, .. } if field.is_empty()) {
        return error;
    }
    // An insert writes the id; an update does not (its own id exists, of course).
    if written.contains_key("id") && matches!(coll.find_one(doc! { "_id": id }).await, Ok(Some(_)))
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
        let holder = doc! { *field: { "$eq": to_bson(&written[*field]) }, "_id": { "$ne": id } };
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
    coll: &Collection<RawDocumentBuf>,
    id: &str,
) -> Result<Outcome, StoreError> {
    match coll
        .find_one(doc! { "_id": id })
        .await
        .map_err(|e| classify(e, None))?
    {
        Some(found) => Ok(Outcome::Refused(raw_to_doc(&found)?)),
        None => Ok(Outcome::Missing),
    }
}

#[async_trait]
impl Store for MongoStore {
    fn kind(&self) -> &'static str {
        BACKEND.name
    }

    async fn insert(&self, collection: &str, doc: Doc) -> Result<(), StoreError> {
        let (spec, coll, route) = self.spec(collection).await?;
        if doc_id(&doc).is_empty() {
            return Err(StoreError::Internal("a document needs a string id".into()));
        }
        let document = to_raw(&doc)?;
        self.write(route, async move {
            match coll.insert_one(document).await {
                Ok(_) => Ok(()),
                Err(e) => {
                    let error = classify(
                        e,
                        Some(Written {
                            spec: &spec,
                            doc: &doc,
                        }),
                    );
                    Err(name_duplicate(&coll, &spec, doc_id(&doc), &doc, error).await)
                }
            }
        })
        .await
    }

    /// One ordered `insertMany` (so a failure leaves a prefix stored, as the trait allows).
    async fn insert_many(&self, collection: &str, docs: Vec<Doc>) -> Result<(), StoreError> {
        let (spec, coll, route) = self.spec(collection).await?;
        if docs.iter().any(|d| doc_id(d).is_empty()) {
            return Err(StoreError::Internal("a document needs a string id".into()));
        }
        if docs.is_empty() {
            return Ok(());
        }
        let documents: Vec<RawDocumentBuf> = docs.iter().map(to_raw).collect::<Result<_, _>>()?;
        // A bulk load may take longer than one operation's timeout: allow a second per 1,000.
        let allowance = self.gate.timeout + Duration::from_millis(docs.len() as u64);
        let count = docs.len();
        let op = async move {
            match coll.insert_many(documents).ordered(true).await {
                Ok(_) => Ok(()),
                Err(e) => {
                    // The first failed document is the one to name; ordered, it is the last tried.
                    let index = failed_index(&e).unwrap_or(0).min(docs.len() - 1);
                    let doc = &docs[index];
                    let error = classify(e, Some(Written { spec: &spec, doc }));
                    Err(name_duplicate(&coll, &spec, doc_id(doc), doc, error).await)
                }
            }
        };
        self.pass(route, Line::Writes, allowance, None, op)
            .await
            .map_err(|e| match e {
                StoreError::Unavailable(why) => StoreError::Unavailable(format!(
                    "MongoDB did not store {count} documents: {why}"
                )),
                other => other,
            })
    }

    async fn get(&self, collection: &str, id: &str) -> Result<Option<Doc>, StoreError> {
        let (_, coll, route) = self.spec(collection).await?;
        let filter = doc! { "_id": id };
        self.read(route, async move {
            let found = coll.find_one(filter).await.map_err(|e| classify(e, None))?;
            found.as_deref().map(raw_to_doc).transpose()
        })
        .await
    }

    /// The stored BSON written straight into the answer's JSON.
    async fn get_json(&self, collection: &str, id: &str) -> Result<Option<Bytes>, StoreError> {
        let (_, coll, route) = self.spec(collection).await?;
        let filter = doc! { "_id": id };
        self.read(route, async move {
            let found = coll.find_one(filter).await.map_err(|e| classify(e, None))?;
            found.as_deref().map(json_bytes).transpose()
        })
        .await
    }

    async fn list(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<Listing, StoreError> {
        let (_, coll, route) = self.spec(collection).await?;
        let query = to_query(None, filter);
        let (items, total) = self.read(route, self::page(coll, query, page, raw_to_doc)).await?;
        Ok(Listing { items, total })
    }

    /// The page's stored BSON written straight into each item's JSON.
    async fn list_json(
        &self,
        collection: &str,
        filter: &Filter,
        page: Page,
    ) -> Result<JsonListing, StoreError> {
        let (_, coll, route) = self.spec(collection).await?;
        let query = to_query(None, filter);
        let (items, total) = self.read(route, self::page(coll, query, page, json_bytes)).await?;
        Ok(JsonListing { items, total })
    }

    async fn update(
        &self,
        collection: &str,
        id: &str,
        expect: &Filter,
        change: &Change,
    ) -> Result<Outcome, StoreError> {
        let (spec, coll, route) = self.spec(collection).await?;
        if change.set.iter().any(|(k, _)| k == "id") {
            return Err(StoreError::Internal("a document's id cannot change".into()));
        }
        let query = to_query(Some(id), expect);
        let owned_id = id.to_string();
        if change.set.is_empty() && change.push.is_empty() {
            // Nothing to change: the outcome is whether the condition holds now.
            return self
                .read(route, async move {
                    match coll.find_one(query).await.map_err(|e| classify(e, None))? {
                        Some(found) => Ok(Outcome::Done(raw_to_doc(&found)?)),
                        None => missing_or_refused(&coll, &owned_id).await,
                    }
                })
                .await;
        }
        let update = to_update(change);
        let set = change.set.clone();
        self.locked_write(route, collection, id, async move {
            let after = match coll
                .find_one_and_update(query, update)
                .return_document(ReturnDocument::After)
                .await
            {
                Ok(after) => after,
                Err(e) => {
                    let written: Doc = set.into_iter().collect();
                    let error = classify(
                        e,
                        Some(Written {
                            spec: &spec,
                            doc: &written,
                        }),
                    );
                    return Err(name_duplicate(&coll, &spec, &owned_id, &written, error).await);
                }
            };
            match after {
                Some(found) => Ok(Outcome::Done(raw_to_doc(&found)?)),
                None => missing_or_refused(&coll, &owned_id).await,
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
        let (_, coll, route) = self.spec(collection).await?;
        let query = to_query(Some(id), expect);
        let owned_id = id.to_string();
        self.locked_write(route, collection, id, async move {
            match coll
                .find_one_and_delete(query)
                .await
                .map_err(|e| classify(e, None))?
            {
                Some(gone) => Ok(Outcome::Done(raw_to_doc(&gone)?)),
                None => missing_or_refused(&coll, &owned_id).await,
            }
        })
        .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let (client, route) = self.clients.here().await?;
        let db = client.db.clone();
        self.read(route, async move {
            db.run_command(doc! { "ping": 1 })
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
        let (client, route) = self.clients.here().await?;
        let db = client.db.clone();
        let stats = self
            .read(route, async move {
                db.run_command(doc! { "dbStats": 1, "scale": 1 })
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

    /// Shuts down every client whose runtime still runs, each within the store's deadline.
    async fn close(&self) -> Result<(), StoreError> {
        let clients = self.clients.live();
        let timeout = self.gate.timeout;
        // `immediate`: don't wait for handles held elsewhere (in-flight requests of other clones).
        let shut = async move {
            for client in clients {
                let _ = tokio::time::timeout(timeout, client.shutdown().immediate(true)).await;
            }
        };
        match self.clients.here().await? {
            (_, Route::Here) => shut.await,
            (_, Route::HandedOver(runtime)) => {
                let _ = runtime.spawn(shut).await;
            }
        }
        Ok(())
    }
}
