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

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use async_trait::async_trait;
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::error::{Error as MongoError, ErrorKind, WriteFailure};
use mongodb::options::{ClientOptions, IndexOptions, ReturnDocument, WriteConcern};
use mongodb::{Client, Collection, Database, IndexModel};
use serde_json::Number;

use super::*;

/// The timeout used when the configuration gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// The connection pool's size per service unless the URI sets `maxPoolSize`: enough for the
/// load tests' concurrent users without queueing on the driver's default of 10.
pub const DEFAULT_MAX_POOL_SIZE: u32 = 64;

/// How many locks conditional writes to the same document are striped over (FerretDB only).
const WRITE_LOCK_STRIPES: usize = 256;

/// MongoDB's duplicate-key error code (E11000).
const DUPLICATE_KEY: i32 = 11000;

/// Server error codes that mean "not now" rather than "never": shutdown, stepdown, network trouble,
/// time limits. They become [`StoreError::Unavailable`].
const TRANSIENT_CODES: &[i32] = &[
    6,     // HostUnreachable
    7,     // HostNotFound
    50,    // MaxTimeMSExpired
    64,    // WriteConcernFailed (wtimeout)
    89,    // NetworkTimeout
    91,    // ShutdownInProgress
    189,   // PrimarySteppedDown
    262,   // ExceededTimeLimit
    9001,  // SocketException
    10107, // NotWritablePrimary
    11600, // InterruptedAtShutdown
    11602, // InterruptedDueToReplStateChange
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
];

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
            for field in spec.indexed.iter().filter(|f| !spec.unique.contains(f)) {
                let model = IndexModel::builder().keys(doc! { *field: 1 }).build();
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

    async fn close(&self) -> Result<(), StoreError> {
        // `immediate`: don't wait for handles held elsewhere (in-flight requests of other clones).
        let _ = tokio::time::timeout(self.timeout, self.client.clone().shutdown().immediate(true))
            .await;
        Ok(())
    }
}

/// What a failed write tried to write, to name the field and value of a duplicate key.
struct Written<'a> {
    spec: &'a CollectionSpec,
    doc: &'a Doc,
}

/// Maps a driver error onto the store's errors. A duplicate whose field the server's message does
/// not name comes back with an empty `field`; [`MongoStore::name_duplicate`] fills it in.
fn classify(e: MongoError, written: Option<Written<'_>>) -> StoreError {
    if let Some(message) = duplicate_key_message(&e) {
        return duplicate(&message, written);
    }
    if is_transient(&e) {
        return StoreError::Unavailable(e.to_string());
    }
    StoreError::Internal(e.to_string())
}

/// The server's message if `e` is a duplicate-key error: E11000 from MongoDB (and FerretDB on
/// insert), or the SQLite constraint FerretDB reports as an internal error on update.
fn duplicate_key_message(e: &MongoError) -> Option<String> {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(we)) if we.code == DUPLICATE_KEY => {
            Some(we.message.clone())
        }
        ErrorKind::Command(ce)
            if ce.code == DUPLICATE_KEY || ce.message.contains("UNIQUE constraint failed") =>
        {
            Some(ce.message.clone())
        }
        ErrorKind::InsertMany(im) => im
            .write_errors
            .as_ref()
            .and_then(|errs| errs.iter().find(|we| we.code == DUPLICATE_KEY))
            .map(|we| we.message.clone()),
        _ => None,
    }
}

fn is_transient(e: &MongoError) -> bool {
    match e.kind.as_ref() {
        ErrorKind::ServerSelection { .. }
        | ErrorKind::Io(_)
        | ErrorKind::ConnectionPoolCleared { .. }
        | ErrorKind::DnsResolve { .. }
        | ErrorKind::Shutdown => true,
        ErrorKind::Command(ce) => TRANSIENT_CODES.contains(&ce.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(wce)) => {
            TRANSIENT_CODES.contains(&wce.code)
        }
        _ => {
            e.contains_label("RetryableWriteError") || e.contains_label("TransientTransactionError")
        }
    }
}

/// A [`StoreError::Duplicate`] for the unique field the server's message names (index names end in
/// `<field>_1`; `_id_` is the id), with an empty field when the message names none.
fn duplicate(message: &str, written: Option<Written<'_>>) -> StoreError {
    let Some(Written { spec, doc }) = written else {
        return StoreError::Duplicate {
            field: "unknown".into(),
            value: message.to_string(),
        };
    };
    if message.contains("index: _id_") || message.contains("_id_ dup key") {
        return StoreError::Duplicate {
            field: "id".into(),
            value: Value::from(doc_id(doc)).to_string(),
        };
    }
    // The longest name that matches, so `number` does not shadow `table_number`.
    let named = spec
        .unique
        .iter()
        .filter(|f| message.contains(&format!("{f}_1")) || message.contains(&format!("{{ {f}:")))
        .max_by_key(|f| f.len());
    match named {
        Some(f) => duplicate_of(f, doc),
        None => StoreError::Duplicate {
            field: String::new(),
            value: String::new(),
        },
    }
}

fn duplicate_of(field: &str, doc: &Doc) -> StoreError {
    StoreError::Duplicate {
        field: field.to_string(),
        value: doc
            .get(field)
            .map(Value::to_string)
            .unwrap_or_else(|| "null".into()),
    }
}

/// The stored name of a field: the API's `id` is MongoDB's `_id`.
fn stored_field(field: &str) -> &str {
    if field == "id" {
        "_id"
    } else {
        field
    }
}

/// A query for `filter` (and the id, if given). Values are compared with `$eq`/`$in`, so a value that
/// looks like an operator (`{"$ne": 1}`) is matched literally, never interpreted.
fn to_query(id: Option<&str>, filter: &Filter) -> Document {
    let mut clauses: Vec<Document> = Vec::new();
    if let Some(id) = id {
        clauses.push(doc! { "_id": { "$eq": id } });
    }
    for (field, cond) in &filter.0 {
        let test = match cond {
            Cond::Eq(v) => doc! { "$eq": to_bson(v) },
            Cond::In(vs) => doc! { "$in": vs.iter().map(to_bson).collect::<Vec<_>>() },
        };
        clauses.push(doc! { stored_field(field): test });
    }
    // One document when every field appears once (what both servers plan best), `$and` otherwise.
    let mut merged = Document::new();
    let mut repeated = false;
    for clause in &clauses {
        for (k, v) in clause {
            repeated |= merged.insert(k.clone(), v.clone()).is_some();
        }
    }
    if repeated {
        doc! { "$and": clauses }
    } else {
        merged
    }
}

/// The update document of `change`: `$set` for fields, `$push` with `$each` for appends.
fn to_update(change: &Change) -> Document {
    let mut update = Document::new();
    if !change.set.is_empty() {
        let set: Document = change
            .set
            .iter()
            .map(|(k, v)| (k.clone(), to_bson(v)))
            .collect();
        update.insert("$set", set);
    }
    if !change.push.is_empty() {
        let push: Document = change
            .push
            .iter()
            .map(|(k, vs)| {
                (
                    k.clone(),
                    Bson::Document(doc! { "$each": vs.iter().map(to_bson).collect::<Vec<_>>() }),
                )
            })
            .collect();
        update.insert("$push", push);
    }
    update
}

/// A JSON document as stored: `id` becomes `_id`.
fn to_document(doc: &Doc) -> Document {
    let mut out = Document::new();
    out.insert("_id", doc_id(doc));
    for (k, v) in doc {
        if k != "id" {
            out.insert(k.clone(), to_bson(v));
        }
    }
    out
}

/// A stored document as JSON: `_id` becomes the string `id`.
fn from_document(document: Document) -> Doc {
    let mut out = Doc::new();
    for (k, v) in document {
        if k == "_id" {
            let id = match v {
                Bson::String(s) => s,
                Bson::ObjectId(oid) => oid.to_hex(),
                other => from_bson(other).to_string(),
            };
            out.insert("id".into(), Value::String(id));
        } else {
            out.insert(k, from_bson(v));
        }
    }
    out
}

/// A JSON value as BSON: integers as 64-bit integers, other numbers as doubles.
fn to_bson(v: &Value) -> Bson {
    match v {
        Value::Null => Bson::Null,
        Value::Bool(b) => Bson::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Bson::Int64(i),
            None => Bson::Double(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Bson::String(s.clone()),
        Value::Array(items) => Bson::Array(items.iter().map(to_bson).collect()),
        Value::Object(map) => {
            Bson::Document(map.iter().map(|(k, v)| (k.clone(), to_bson(v))).collect())
        }
    }
}

/// A BSON value as plain JSON. Types Brigade never writes (dates, ids, decimals, binaries) become
/// strings rather than extended-JSON objects, so no BSON shape reaches the API.
fn from_bson(v: Bson) -> Value {
    match v {
        Bson::Null | Bson::Undefined => Value::Null,
        Bson::Boolean(b) => Value::Bool(b),
        Bson::Int32(i) => Value::from(i),
        Bson::Int64(i) => Value::from(i),
        Bson::Double(f) => Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Bson::String(s) => Value::String(s),
        Bson::Array(items) => Value::Array(items.into_iter().map(from_bson).collect()),
        Bson::Document(d) => Value::Object(d.into_iter().map(|(k, v)| (k, from_bson(v))).collect()),
        Bson::ObjectId(oid) => Value::String(oid.to_hex()),
        Bson::DateTime(dt) => Value::String(
            dt.try_to_rfc3339_string()
                .unwrap_or_else(|_| dt.to_string()),
        ),
        Bson::Decimal128(d) => Value::String(d.to_string()),
        Bson::Symbol(s) => Value::String(s),
        other => Value::String(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_round_trip_with_the_id_as_the_string_id() {
        let doc = json!({"id": "abc", "n": 3, "big": i64::MAX, "x": 1.5, "items": [{"dish": "soup", "qty": 2}], "w": null})
            .as_object()
            .cloned()
            .unwrap();
        let stored = to_document(&doc);
        assert_eq!(stored.get_str("_id").unwrap(), "abc");
        assert!(!stored.contains_key("id"));
        assert_eq!(stored.get("n"), Some(&Bson::Int64(3)));
        assert_eq!(from_document(stored), doc);
    }

    #[test]
    fn bson_types_become_plain_json() {
        let oid = mongodb::bson::oid::ObjectId::new();
        let d = doc! { "_id": oid, "i": 7_i32, "when": mongodb::bson::DateTime::from_millis(0) };
        let json = from_document(d);
        assert_eq!(json["id"], json!(oid.to_hex()));
        assert_eq!(json["i"], json!(7));
        assert_eq!(json["when"], json!("1970-01-01T00:00:00Z"));
    }

    #[test]
    fn queries_compare_literally_and_map_id() {
        let q = to_query(Some("x"), &Filter::all().eq("state", json!({"$ne": 1})));
        assert_eq!(
            q,
            doc! { "_id": { "$eq": "x" }, "state": { "$eq": { "$ne": 1_i64 } } }
        );
        let repeated = to_query(Some("x"), &Filter::all().one_of("id", ["a"]));
        assert_eq!(
            repeated,
            doc! { "$and": [ { "_id": { "$eq": "x" } }, { "_id": { "$in": ["a"] } } ] }
        );
    }

    #[test]
    fn updates_set_then_push_each() {
        let u = to_update(
            &Change::default()
                .set("state", "busy")
                .push("log", vec![json!(1), json!(2)]),
        );
        assert_eq!(
            u,
            doc! { "$set": { "state": "busy" }, "$push": { "log": { "$each": [1_i64, 2_i64] } } }
        );
    }
}

/// Test helpers shared by every test that needs a MongoDB: discovery and per-test databases.
#[cfg(feature = "testing")]
pub mod testing {
    use std::sync::atomic::{AtomicU64, Ordering};

    use tokio::sync::OnceCell;

    /// The image tests start when no `MONGODB_URI` is given and a Docker engine is reachable.
    pub const MONGO_IMAGE_TAG: &str = "7";

    static DISCOVERED: OnceCell<Result<String, String>> = OnceCell::const_new();

    /// A MongoDB connection string for tests, found once per process, in this order: `MONGODB_URI`
    /// if set; else a `mongo:7` container started with testcontainers (kept for the whole process);
    /// else `None`, after one loud line on stderr saying why the MongoDB tests are skipped. With
    /// `BRIGADE_REQUIRE_MONGO=1` (as in CI) that skip is a panic instead.
    pub async fn mongo_uri() -> Option<String> {
        let found = DISCOVERED.get_or_init(discover).await;
        match found {
            Ok(uri) => Some(uri.clone()),
            Err(why) => {
                if require_mongo() {
                    panic!("BRIGADE_REQUIRE_MONGO=1 but no MongoDB is available: {why}");
                }
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    loud(&format!(
                        "!!! SKIPPING MongoDB tests: {why} (set MONGODB_URI, e.g. \
                         `eval \"export $(bash scripts/ferretdb.sh start)\"`)"
                    ))
                });
                None
            }
        }
    }

    /// Writes one line to the process's stderr directly: the test harness captures `eprintln!`
    /// of passing tests, and a skip must be seen.
    pub fn loud(line: &str) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    /// Whether `BRIGADE_REQUIRE_MONGO` asks for a failure instead of a skip.
    pub fn require_mongo() -> bool {
        std::env::var("BRIGADE_REQUIRE_MONGO")
            .is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
    }

    /// A database name no other test (of this or another process) uses: `<prefix>_<pid>_<n>_<random>`,
    /// cut to MongoDB's 63-character limit.
    pub fn unique_database(prefix: &str) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let random = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let clean: String = prefix
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(32)
            .collect();
        format!("{clean}_{}_{n}_{random}", std::process::id())
    }

    /// `uri` with its database path set to `database` (query options kept), so that every service
    /// opened with it uses that database.
    pub fn with_database(uri: &str, database: &str) -> String {
        let (scheme, rest) = match uri.find("://") {
            Some(i) => uri.split_at(i + 3),
            None => ("", uri),
        };
        let (before_query, query) = match rest.find('?') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let hosts = before_query.split('/').next().unwrap_or(before_query);
        format!("{scheme}{hosts}/{database}{query}")
    }

    async fn discover() -> Result<String, String> {
        if let Ok(uri) = std::env::var("MONGODB_URI") {
            if !uri.trim().is_empty() {
                return Ok(uri);
            }
        }
        start_container().await
    }

    /// Starts `mongo:7` on a thread of its own whose runtime outlives every test's runtime, and keeps
    /// the container there until the process ends.
    async fn start_container() -> Result<String, String> {
        use testcontainers_modules::mongo::Mongo;
        use testcontainers_modules::testcontainers::runners::AsyncRunner;
        use testcontainers_modules::testcontainers::ImageExt;

        let (tx, rx) = tokio::sync::oneshot::channel::<Result<String, String>>();
        std::thread::Builder::new()
            .name("mongo-testcontainer".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(format!(
                            "cannot build a runtime for the container: {e}"
                        )));
                        return;
                    }
                };
                rt.block_on(async move {
                    let container = match Mongo::default().with_tag(MONGO_IMAGE_TAG).start().await {
                        Ok(c) => c,
                        Err(e) => {
                            let _ = tx.send(Err(format!(
                                "no MONGODB_URI and no usable Docker engine ({e})"
                            )));
                            return;
                        }
                    };
                    let address = async {
                        let host = container.get_host().await.map_err(|e| e.to_string())?;
                        let port = container
                            .get_host_port_ipv4(27017)
                            .await
                            .map_err(|e| e.to_string())?;
                        Ok::<_, String>(format!("mongodb://{host}:{port}/"))
                    }
                    .await;
                    let _ = tx.send(address);
                    // Keep the container (and this runtime) for the rest of the process.
                    std::future::pending::<()>().await;
                });
            })
            .map_err(|e| format!("cannot start the container thread: {e}"))?;
        let uri = rx
            .await
            .map_err(|_| "the container thread ended early".to_string())??;
        loud(&format!(
            "MongoDB tests use a mongo:{MONGO_IMAGE_TAG} container at {uri}"
        ));
        Ok(uri)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn with_database_replaces_only_the_path() {
            assert_eq!(with_database("mongodb://h:1", "d"), "mongodb://h:1/d");
            assert_eq!(with_database("mongodb://h:1/", "d"), "mongodb://h:1/d");
            assert_eq!(
                with_database("mongodb://u:p@h:1,g:2/old?w=1", "d"),
                "mongodb://u:p@h:1,g:2/d?w=1"
            );
            assert_eq!(
                with_database("mongodb://h/?replicaSet=rs", "d"),
                "mongodb://h/d?replicaSet=rs"
            );
        }

        #[test]
        fn unique_databases_differ_and_are_valid_names() {
            let a = unique_database("brigade test.x");
            let b = unique_database("brigade test.x");
            assert_ne!(a, b);
            assert!(
                a.len() <= 63 && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{a}"
            );
        }
    }
}
