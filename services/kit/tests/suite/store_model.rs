//! Property tests: random sequences of inserts, conditional updates (set and push), conditional
//! deletes, gets and lists (indexed, unindexed, `In` and multi-field filters, offsets, limits) run
//! against each backend and against a plain model in this file; every outcome, and every list's
//! items, order and total, must agree. The embedded store is also closed and reopened mid-sequence
//! and at the end, and its lists (served by its indexes) checked again.
//!
//! Run: `cargo test -p brigade-kit --test suite store_model` (memory, embedded); with MongoDB:
//! `MONGODB_URI=mongodb://127.0.0.1:27017/ cargo test -p brigade-kit --features testing --test suite store_model`.
//! Set `PROPTEST_CASES` to run more cases.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use brigade_kit::store::{
    Change, CollectionSpec, Cond, Doc, Filter, Outcome, Page, Store, StoreError,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

/// `number` is unique; `state` and `table` are indexed; `color` is not.
const SPEC: CollectionSpec = CollectionSpec {
    name: "props",
    unique: &["number"],
    indexed: &["state", "table"],
};
const C: &str = SPEC.name;

/// What a field is set to: left out, or a value.
#[derive(Debug, Clone)]
enum Slot {
    Missing,
    Set(Value),
}

fn state_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!("a")),
        Just(json!("b")),
        Just(json!("c"))
    ]
}

fn table_value() -> impl Strategy<Value = Value> {
    prop_oneof![Just(Value::Null), Just(json!("t1")), Just(json!("t2"))]
}

fn color_value() -> impl Strategy<Value = Value> {
    prop_oneof![Just(Value::Null), Just(json!("red")), Just(json!("blue"))]
}

fn number_value() -> impl Strategy<Value = Value> {
    (0u8..12).prop_map(|n| json!(n))
}

fn slot(values: impl Strategy<Value = Value> + 'static) -> impl Strategy<Value = Slot> {
    prop_oneof![1 => Just(Slot::Missing), 4 => values.prop_map(Slot::Set)]
}

fn field_value(field: &'static str) -> BoxedStrategy<Value> {
    match field {
        "state" => state_value().boxed(),
        "table" => table_value().boxed(),
        "color" => color_value().boxed(),
        _ => number_value().boxed(),
    }
}

fn cond(field: &'static str) -> impl Strategy<Value = (String, Cond)> {
    prop_oneof![
        field_value(field).prop_map(Cond::Eq),
        prop::collection::vec(field_value(field), 0..4).prop_map(Cond::In),
    ]
    .prop_map(move |c| (field.to_string(), c))
}

fn filter() -> impl Strategy<Value = Filter> {
    let one = prop_oneof![
        3 => cond("state"),
        2 => cond("table"),
        2 => cond("color"),
        1 => cond("number"),
    ];
    prop::collection::vec(one, 0..3).prop_map(Filter)
}

fn id() -> impl Strategy<Value = String> {
    (0u8..16).prop_map(|n| format!("d{n:02}"))
}

/// One step of a sequence.
#[derive(Debug, Clone)]
enum Op {
    Insert(Doc),
    Update {
        id: String,
        expect: Filter,
        change: Change,
    },
    Delete {
        id: String,
        expect: Filter,
    },
    Get {
        id: String,
    },
    List {
        filter: Filter,
        page: Page,
    },
    /// Close and reopen the store (embedded only; a no-op elsewhere).
    Reopen,
}

/// A document to insert: `state`, `table` and `color` as the slots say, an empty `log` or none.
fn new_doc(id: String, number: Value, slots: [Slot; 3], log: bool) -> Doc {
    let mut doc = Doc::new();
    doc.insert("id".into(), json!(id));
    doc.insert("number".into(), number);
    for (k, s) in ["state", "table", "color"].into_iter().zip(slots) {
        if let Slot::Set(v) = s {
            doc.insert(k.into(), v);
        }
    }
    if log {
        doc.insert("log".into(), json!([]));
    }
    doc
}

fn change() -> impl Strategy<Value = Change> {
    let set = prop_oneof![
        state_value().prop_map(|v| ("state".to_string(), v)),
        table_value().prop_map(|v| ("table".to_string(), v)),
        color_value().prop_map(|v| ("color".to_string(), v)),
        number_value().prop_map(|v| ("number".to_string(), v)),
    ];
    (
        prop::collection::vec(set, 0..3),
        prop::option::of(prop::collection::vec(0u8..100, 1..3)),
    )
        .prop_map(|(set, push)| Change {
            set,
            push: push
                .map(|vs| vec![("log".to_string(), vs.into_iter().map(Value::from).collect())])
                .unwrap_or_default(),
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (id(), number_value(), slot(state_value()), slot(table_value()), slot(color_value()), any::<bool>())
            .prop_map(|(id, number, state, table, color, log)| Op::Insert(new_doc(id, number, [state, table, color], log))),
        4 => (id(), filter(), change()).prop_map(|(id, expect, change)| Op::Update { id, expect, change }),
        2 => (id(), filter()).prop_map(|(id, expect)| Op::Delete { id, expect }),
        1 => id().prop_map(|id| Op::Get { id }),
        4 => (filter(), 0u64..6, 1u64..6).prop_map(|(filter, offset, limit)| Op::List { filter, page: Page { offset, limit } }),
        1 => Just(Op::Reopen),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..50)
}

/// What a write came to, comparable across backends (a duplicate by its field alone: backends
/// word the value differently).
#[derive(Debug, Clone, PartialEq)]
enum Result2 {
    Inserted,
    Done(Doc),
    Missing,
    Refused(Doc),
    Duplicate(String),
}

fn from_outcome(o: Result<Outcome, StoreError>) -> Result<Result2, TestCaseError> {
    match o {
        Ok(Outcome::Done(d)) => Ok(Result2::Done(d)),
        Ok(Outcome::Missing) => Ok(Result2::Missing),
        Ok(Outcome::Refused(d)) => Ok(Result2::Refused(d)),
        Err(StoreError::Duplicate { field, .. }) => Ok(Result2::Duplicate(field)),
        Err(e) => Err(TestCaseError::fail(format!("store error: {e}"))),
    }
}

/// The plain model: documents by id.
#[derive(Default)]
struct Model {
    docs: BTreeMap<String, Doc>,
}

impl Model {
    fn number_taken(&self, doc: &Doc, id: &str) -> bool {
        self.docs
            .values()
            .any(|d| d["id"] != json!(id) && d.get("number") == doc.get("number"))
    }

    fn insert(&mut self, doc: Doc) -> Result2 {
        let id = doc["id"].as_str().unwrap().to_string();
        if self.docs.contains_key(&id) {
            return Result2::Duplicate("id".into());
        }
        if self.number_taken(&doc, &id) {
            return Result2::Duplicate("number".into());
        }
        self.docs.insert(id, doc);
        Result2::Inserted
    }

    fn update(&mut self, id: &str, expect: &Filter, change: &Change) -> Result2 {
        let Some(doc) = self.docs.get(id) else {
            return Result2::Missing;
        };
        if !expect.matches(doc) {
            return Result2::Refused(doc.clone());
        }
        let mut next = doc.clone();
        change.apply(&mut next);
        if self.number_taken(&next, id) {
            return Result2::Duplicate("number".into());
        }
        self.docs.insert(id.to_string(), next.clone());
        Result2::Done(next)
    }

    fn delete(&mut self, id: &str, expect: &Filter) -> Result2 {
        match self.docs.get(id) {
            None => Result2::Missing,
            Some(doc) if !expect.matches(doc) => Result2::Refused(doc.clone()),
            Some(_) => Result2::Done(self.docs.remove(id).unwrap()),
        }
    }

    fn list(&self, filter: &Filter, page: Page) -> (Vec<Doc>, u64) {
        let all: Vec<&Doc> = self.docs.values().filter(|d| filter.matches(d)).collect();
        let items = all
            .iter()
            .skip(page.offset as usize)
            .take(page.limit as usize)
            .map(|d| (*d).clone())
            .collect();
        (items, all.len() as u64)
    }
}

/// A backend under test.
enum Backend {
    Memory,
    Embedded(PathBuf),
    /// The server's URI, and the store of the case running (dropped with its database after it).
    #[cfg(feature = "testing")]
    Mongo(
        String,
        std::sync::Mutex<Option<Arc<brigade_kit::store::mongo::MongoStore>>>,
    ),
}

impl Backend {
    async fn open(&self) -> Arc<dyn Store> {
        match self {
            Backend::Memory => Arc::new(brigade_kit::store::memory::MemoryStore::new(&[SPEC])),
            Backend::Embedded(path) => Arc::new(
                brigade_kit::store::embedded::EmbeddedStore::open(path, &[SPEC], None)
                    .await
                    .expect("opening the embedded store"),
            ),
            #[cfg(feature = "testing")]
            Backend::Mongo(uri, current) => {
                let db = brigade_kit::store::mongo::testing::unique_database("brigade_props");
                let store = Arc::new(
                    brigade_kit::store::mongo::MongoStore::connect(
                        uri,
                        &db,
                        &[SPEC],
                        std::time::Duration::from_secs(10),
                    )
                    .await
                    .expect("connecting to MongoDB"),
                );
                *current.lock().unwrap() = Some(store.clone());
                store
            }
        }
    }

    /// Drops what the case left on a server.
    async fn clean_up(&self) {
        #[cfg(feature = "testing")]
        if let Backend::Mongo(_, current) = self {
            let store = current.lock().unwrap().take();
            if let Some(store) = store {
                store.drop_database().await.ok();
            }
        }
    }

    fn reopens(&self) -> bool {
        matches!(self, Backend::Embedded(_))
    }
}

/// Lists checked after every reopen: every indexed value alone, `In`s, combinations, an
/// unindexed field, all of it.
fn checked_lists() -> Vec<Filter> {
    let mut filters = vec![Filter::all()];
    for s in [Value::Null, json!("a"), json!("b"), json!("c")] {
        filters.push(Filter::all().eq("state", s.clone()));
        filters.push(Filter::all().eq("state", s).eq("table", "t1"));
    }
    for t in [Value::Null, json!("t1"), json!("t2")] {
        filters.push(Filter::all().eq("table", t.clone()));
        filters.push(Filter::all().eq("table", t).eq("color", "red"));
    }
    filters.push(Filter::all().one_of("state", [json!("a"), Value::Null]));
    filters.push(
        Filter::all()
            .one_of("state", [json!("b"), json!("c")])
            .one_of("table", [json!("t2"), Value::Null]),
    );
    filters.push(Filter::all().eq("color", "blue"));
    filters
}

async fn check_list(
    store: &dyn Store,
    model: &Model,
    filter: &Filter,
    page: Page,
) -> Result<(), TestCaseError> {
    let want = model.list(filter, page);
    let got = store
        .list(C, filter, page)
        .await
        .map_err(|e| TestCaseError::fail(format!("list: {e}")))?;
    prop_assert_eq!(
        (&got.items, got.total),
        (&want.0, want.1),
        "list {:?} {:?}",
        filter,
        page
    );
    let json = store
        .list_json(C, filter, page)
        .await
        .map_err(|e| TestCaseError::fail(format!("list_json: {e}")))?;
    let decoded: Vec<Doc> = json
        .items
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect();
    prop_assert_eq!(
        (&decoded, json.total),
        (&want.0, want.1),
        "list_json {:?}",
        filter
    );
    Ok(())
}

async fn check_all_lists(store: &dyn Store, model: &Model) -> Result<(), TestCaseError> {
    for f in checked_lists() {
        for page in [
            Page {
                offset: 0,
                limit: 100,
            },
            Page {
                offset: 1,
                limit: 2,
            },
        ] {
            check_list(store, model, &f, page).await?;
        }
    }
    Ok(())
}

async fn run_case(backend: &Backend, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut store = backend.open().await;
    let mut model = Model::default();
    for op in ops {
        match op {
            Op::Insert(doc) => {
                let id = doc["id"].clone();
                let want = model.insert(doc.clone());
                let got = match store.insert(C, doc).await {
                    Ok(()) => Result2::Inserted,
                    Err(StoreError::Duplicate { field, .. }) => Result2::Duplicate(field),
                    Err(e) => return Err(TestCaseError::fail(format!("insert: {e}"))),
                };
                prop_assert_eq!(got, want, "insert {}", id);
            }
            Op::Update { id, expect, change } => {
                let want = model.update(&id, &expect, &change);
                let got = from_outcome(store.update(C, &id, &expect, &change).await)?;
                prop_assert_eq!(got, want, "update {} {:?} {:?}", id, expect, change);
            }
            Op::Delete { id, expect } => {
                let want = model.delete(&id, &expect);
                let got = from_outcome(store.delete(C, &id, &expect).await)?;
                prop_assert_eq!(got, want, "delete {} {:?}", id, expect);
            }
            Op::Get { id } => {
                let want = model.docs.get(&id).cloned();
                let got = store
                    .get(C, &id)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("get: {e}")))?;
                prop_assert_eq!(&got, &want, "get {}", id);
                let bytes = store
                    .get_json(C, &id)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("get_json: {e}")))?;
                let decoded: Option<Doc> = bytes.map(|b| serde_json::from_slice(&b).unwrap());
                prop_assert_eq!(&decoded, &want, "get_json {}", id);
            }
            Op::List { filter, page } => check_list(store.as_ref(), &model, &filter, page).await?,
            Op::Reopen if backend.reopens() => {
                drop(store);
                store = backend.open().await;
                check_all_lists(store.as_ref(), &model).await?;
            }
            Op::Reopen => {}
        }
    }
    check_all_lists(store.as_ref(), &model).await?;
    if backend.reopens() {
        drop(store);
        store = backend.open().await;
        check_all_lists(store.as_ref(), &model).await?;
    }
    store.close().await.ok();
    Ok(())
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_memory_store_agrees_with_the_model() {
    let rt = runtime();
    runner(cases(64))
        .run(&ops(), |ops| rt.block_on(run_case(&Backend::Memory, ops)))
        .unwrap();
}

#[test]
fn the_embedded_store_agrees_with_the_model_across_reopens() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicU32::new(0);
    runner(cases(24))
        .run(&ops(), |ops| {
            let case = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let backend = Backend::Embedded(dir.path().join(format!("case{case}.redb")));
            rt.block_on(run_case(&backend, ops))
        })
        .unwrap();
}

#[cfg(feature = "testing")]
#[test]
fn the_mongo_store_agrees_with_the_model() {
    let rt = runtime();
    let Some(uri) = rt.block_on(brigade_kit::store::mongo::testing::mongo_uri()) else {
        return;
    };
    let backend = Backend::Mongo(uri, Default::default());
    runner(cases(8))
        .run(&ops(), |ops| {
            rt.block_on(async {
                let result = run_case(&backend, ops).await;
                backend.clean_up().await;
                result
            })
        })
        .unwrap();
}
