//! The MongoDB backend, on the official `mongodb` driver. It works against MongoDB 5+ and against
//! FerretDB v1 (a MongoDB-compatible server on SQLite or PostgreSQL), so it uses only what both
//! have: no transactions, no aggregation beyond counting, plain single and compound conditions.
//!
//! - One database per service (`brigade_waiter`, ...); a database named in the URI wins.
//! - Every racing change is one `findAndModify` whose filter carries the expected state (`$push`
//!   with `$each` for appends), so the server checks the condition and applies the change together:
//!   of racing writers exactly one matches. A miss is followed by a plain read of the id to tell
//!   [`Outcome::Missing`] from [`Outcome::Refused`].
//! - Writes use the write concern `{j: true}` (unless the URI sets one): on a single node the write is
//!   in the journal before it is acknowledged. Replica sets should set `w=majority` in the URI.
//! - Every call is bounded by the configured timeout (server selection and the operation together);
//!   an unreachable server or a timeout is [`StoreError::Unavailable`], which the API answers 503.
//!   The driver keeps monitoring the server, so the store recovers by itself once it is back.
//! - Documents keep the API's JSON shapes: `id` is stored as the string `_id`, integers stay integers
//!   (stored as 64-bit), and values read back are plain JSON (no BSON types leak out).

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
        let store = MongoStore {
            client,
            db,
            specs: collections.to_vec(),
            timeout,
        };
        store.create_indexes().await?;
        tracing::debug!(database = %database, "MongoDB store ready");
        Ok(store)
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
            coll.insert_one(document)
                .await
                .map(drop)
                .map_err(|e| classify(e, Some(Written { spec, doc: &doc })))
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
            let after = coll
                .find_one_and_update(query, update)
                .return_document(ReturnDocument::After)
                .await
                .map_err(|e| {
                    classify(
                        e,
                        Some(Written {
                            spec,
                            doc: &written,
                        }),
                    )
                })?;
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

/// Maps a driver error onto the store's errors.
fn classify(e: MongoError, written: Option<Written<'_>>) -> StoreError {
    if let Some(message) = duplicate_key_message(&e) {
        return duplicate(&message, written);
    }
    if is_transient(&e) {
        return StoreError::Unavailable(e.to_string());
    }
    StoreError::Internal(e.to_string())
}

/// The server's message if `e` is a duplicate-key error.
fn duplicate_key_message(e: &MongoError) -> Option<String> {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(we)) if we.code == DUPLICATE_KEY => {
            Some(we.message.clone())
        }
        ErrorKind::Command(ce) if ce.code == DUPLICATE_KEY => Some(ce.message.clone()),
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

/// A [`StoreError::Duplicate`] naming the unique field the server's message names (MongoDB's index
/// names are `<field>_1`), or else the first unique field the write set.
fn duplicate(message: &str, written: Option<Written<'_>>) -> StoreError {
    let Some(Written { spec, doc }) = written else {
        return StoreError::Duplicate {
            field: "unknown".into(),
            value: message.to_string(),
        };
    };
    let named = spec.unique.iter().find(|f| {
        message.contains(&format!("index: {f}_1"))
            || message.contains(&format!("{{ {f}:"))
            || message.contains(&format!("\"{f}\""))
    });
    let field = named
        .or_else(|| spec.unique.iter().find(|f| doc.contains_key(**f)))
        .or(spec.unique.first());
    match field {
        Some(f) => StoreError::Duplicate {
            field: f.to_string(),
            value: doc
                .get(*f)
                .map(Value::to_string)
                .unwrap_or_else(|| "?".into()),
        },
        None => StoreError::Duplicate {
            field: "_id".into(),
            value: doc_id(doc).to_string(),
        },
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
