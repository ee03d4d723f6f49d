//! The embedded store's own tests: conformance, reopening, files written before indexes existed,
//! and grouped commits.

use std::time::{Duration, Instant};

use serde_json::json;

use super::*;

fn doc(v: Value) -> Doc {
    v.as_object().cloned().expect("an object")
}

async fn open(path: &Path) -> EmbeddedStore {
    EmbeddedStore::open(path, &[conformance::SPEC], None)
        .await
        .unwrap()
}

fn page() -> Page {
    Page {
        offset: 0,
        limit: 100,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_store_passes_the_store_conformance_checks() {
    let dir = tempfile::tempdir().unwrap();
    conformance::run(Arc::new(open(&dir.path().join("t.redb")).await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_store_passes_the_conformance_checks_with_reads_on_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("t.redb")).await;
    store.set_read_path(ReadPath::Pool);
    conformance::run(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_store_keeps_documents_and_indexes_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.redb");
    let id = new_id();
    {
        let store = open(&path).await;
        store
            .insert("things", doc(json!({"id": id, "number": 7, "state": "x"})))
            .await
            .unwrap();
    }
    let store = open(&path).await;
    assert_eq!(
        store.get("things", &id).await.unwrap().unwrap()["number"],
        json!(7)
    );
    let found = store
        .list("things", &Filter::all().eq("state", "x"), page())
        .await
        .unwrap();
    assert_eq!((found.total, found.items.len()), (1, 1));
    let dup = store
        .insert("things", doc(json!({"id": new_id(), "number": 7})))
        .await;
    assert!(matches!(dup, Err(StoreError::Duplicate { .. })), "{dup:?}");
}

/// Writes a file the way the store did before it had indexes: documents, and unique tables keyed
/// by the value's plain JSON, no meta table.
fn write_old_file(path: &Path, docs: &[Doc]) {
    let db = Database::create(path).unwrap();
    let tx = db.begin_write().unwrap();
    {
        let mut t = tx.open_table(layout::docs_table("things")).unwrap();
        let mut u = tx
            .open_table(layout::unique_table("things#number"))
            .unwrap();
        for d in docs {
            t.insert(doc_id(d), serde_json::to_vec(d).unwrap().as_slice())
                .unwrap();
            if let Some(n) = d.get("number") {
                u.insert(n.to_string().as_str(), doc_id(d)).unwrap();
            }
        }
    }
    tx.commit().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_before_indexes_existed_opens_with_its_indexes_built() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.redb");
    let docs: Vec<Doc> = (0..30)
        .map(|n| {
            let state = match n % 3 {
                0 => json!("free"),
                1 => json!("busy"),
                _ => Value::Null,
            };
            let mut d = doc(json!({"id": format!("{n:04}"), "number": n}));
            if n % 6 != 2 {
                d.insert("state".into(), state); // n % 6 == 2: no state at all
            }
            d
        })
        .collect();
    write_old_file(&path, &docs);
    let store = open(&path).await;
    for (cond, want) in [
        (Cond::Eq(json!("free")), 10),
        (Cond::Eq(json!("busy")), 10),
        (Cond::Eq(Value::Null), 10),
        (Cond::In(vec![json!("busy"), Value::Null]), 20),
    ] {
        let filter = Filter(vec![("state".into(), cond.clone())]);
        let found = store
            .list(
                "things",
                &filter,
                Page {
                    offset: 2,
                    limit: 3,
                },
            )
            .await
            .unwrap();
        let expected: Vec<&Doc> = docs.iter().filter(|d| filter.matches(d)).collect();
        assert_eq!(found.total, want, "{cond:?}");
        assert_eq!(found.items.len(), 3);
        assert_eq!(
            found.items.iter().collect::<Vec<_>>(),
            expected[2..5].to_vec(),
            "{cond:?}"
        );
    }
    // The unique table was rebuilt in the new key form: a taken number is refused.
    let dup = store
        .insert("things", doc(json!({"id": "new", "number": 4})))
        .await;
    assert!(matches!(dup, Err(StoreError::Duplicate { .. })), "{dup:?}");
    drop(store);
    // And opening it again finds the indexes recorded, not rebuilt.
    let store = open(&path).await;
    let free = store
        .list("things", &Filter::all().eq("state", "free"), page())
        .await
        .unwrap();
    assert_eq!(free.total, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_an_indexed_field_drops_its_tables_and_adding_it_back_rebuilds_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.redb");
    let unindexed = CollectionSpec {
        indexed: &[],
        ..conformance::SPEC
    };
    {
        let store = open(&path).await;
        store
            .insert("things", doc(json!({"id": "a", "number": 1, "state": "x"})))
            .await
            .unwrap();
    }
    {
        // Written while `state` was not indexed: its index would be stale if it were kept.
        let store = EmbeddedStore::open(&path, &[unindexed], None)
            .await
            .unwrap();
        store
            .update(
                "things",
                "a",
                &Filter::all(),
                &Change::default().set("state", "y"),
            )
            .await
            .unwrap();
    }
    let store = open(&path).await;
    let x = store
        .list("things", &Filter::all().eq("state", "x"), page())
        .await
        .unwrap();
    let y = store
        .list("things", &Filter::all().eq("state", "y"), page())
        .await
        .unwrap();
    assert_eq!((x.total, y.total), (0, 1));
}

/// Waits until `n` jobs are queued behind the held writer (no timing bound: a guard against a
/// hang). The count rises after each send, so once it reads `n` all `n` jobs are in the channel.
async fn wait_queued(store: &EmbeddedStore, n: isize) {
    let started = Instant::now();
    while store.writer.queued() < n {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "only {} of {n} writes queued",
            store.writer.queued()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
// The held lock stops the writer thread, not a task: no async code waits for it.
#[allow(clippy::await_holding_lock)]
async fn concurrent_writers_share_commits_and_a_refused_write_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(&dir.path().join("t.redb")).await);
    let c = "things";
    store
        .insert(c, doc(json!({"id": "race", "number": 0, "state": "free"})))
        .await
        .unwrap();
    let before = store.commit_stats();

    // Hold the writer so that all 64 writes queue, then let them go as one group.
    let held = store.writer.hold();
    let mut tasks = Vec::new();
    for i in 0..64u32 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            match i % 4 {
                // 16 race for the same conditional update: one wins.
                0 => match s
                    .update(
                        c,
                        "race",
                        &Filter::all().eq("state", "free"),
                        &Change::default().set("state", "busy").set("by", i),
                    )
                    .await
                    .unwrap()
                {
                    Outcome::Done(_) => "won",
                    Outcome::Refused(d) => {
                        assert_eq!(d["state"], json!("busy"));
                        "refused"
                    }
                    Outcome::Missing => panic!("the raced document vanished"),
                },
                // 16 insert the same unique number: one wins.
                1 => match s
                    .insert(c, doc(json!({"id": format!("n{i:02}"), "number": 42})))
                    .await
                {
                    Ok(()) => "inserted-42",
                    Err(StoreError::Duplicate { field, .. }) => {
                        assert_eq!(field, "number");
                        "duplicate"
                    }
                    Err(e) => panic!("{e}"),
                },
                // 32 independent inserts: all land.
                _ => {
                    s.insert(
                        c,
                        doc(json!({"id": format!("i{i:02}"), "number": 1000 + i, "state": "free"})),
                    )
                    .await
                    .unwrap();
                    "inserted"
                }
            }
        }));
    }
    wait_queued(&store, 64).await;
    drop(held);
    let mut tally: HashMap<&str, usize> = HashMap::new();
    for t in tasks {
        *tally.entry(t.await.unwrap()).or_default() += 1;
    }
    assert_eq!(tally["won"], 1, "{tally:?}");
    assert_eq!(tally["refused"], 15, "{tally:?}");
    assert_eq!(tally["inserted-42"], 1, "{tally:?}");
    assert_eq!(tally["duplicate"], 15, "{tally:?}");
    assert_eq!(tally["inserted"], 32, "{tally:?}");

    let after = store.commit_stats();
    assert_eq!(after.writes - before.writes, 64);
    assert_eq!(
        after.commits - before.commits,
        1,
        "64 queued writes should share one commit: {before:?} → {after:?}"
    );
    // Every write of the group landed, and the indexes agree with the documents.
    let all = store.list(c, &Filter::all(), page()).await.unwrap();
    assert_eq!(all.total, 1 + 1 + 32);
    let free = store
        .list(c, &Filter::all().eq("state", "free"), page())
        .await
        .unwrap();
    assert_eq!(free.total, 32);
    let forty_two = store
        .list(c, &Filter::all().eq("number", 42), page())
        .await
        .unwrap();
    assert_eq!(forty_two.total, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
// The held lock stops the writer thread, not a task: no async code waits for it.
#[allow(clippy::await_holding_lock)]
async fn later_writes_of_a_group_see_what_earlier_ones_left() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(&dir.path().join("t.redb")).await);
    let c = "things";
    let held = store.writer.hold();
    // In arrival order: insert, update it, delete it, insert its number again.
    let s = store.clone();
    let first = tokio::spawn(async move {
        s.insert(c, doc(json!({"id": "a", "number": 1, "state": "free"})))
            .await
    });
    wait_queued(&store, 1).await;
    let s = store.clone();
    let second = tokio::spawn(async move {
        s.update(
            c,
            "a",
            &Filter::all().eq("state", "free"),
            &Change::default().set("state", "busy"),
        )
        .await
    });
    wait_queued(&store, 2).await;
    let s = store.clone();
    let third =
        tokio::spawn(async move { s.delete(c, "a", &Filter::all().eq("state", "busy")).await });
    wait_queued(&store, 3).await;
    let s = store.clone();
    let fourth = tokio::spawn(async move {
        s.insert(c, doc(json!({"id": "b", "number": 1, "state": "free"})))
            .await
    });
    wait_queued(&store, 4).await;
    let before = store.commit_stats();
    drop(held);
    first.await.unwrap().unwrap();
    assert!(matches!(second.await.unwrap().unwrap(), Outcome::Done(_)));
    assert!(matches!(third.await.unwrap().unwrap(), Outcome::Done(_)));
    fourth.await.unwrap().unwrap();
    assert_eq!(store.commit_stats().commits - before.commits, 1);
    let busy = store
        .list(c, &Filter::all().eq("state", "busy"), page())
        .await
        .unwrap();
    let free = store
        .list(c, &Filter::all().eq("state", "free"), page())
        .await
        .unwrap();
    assert_eq!((busy.total, free.total), (0, 1));
    assert_eq!(doc_id(&free.items[0]), "b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_many_is_all_or_nothing_per_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("t.redb")).await;
    let many: Vec<Doc> = (0..10_000)
        .map(|n| doc(json!({"id": format!("{n:06}"), "number": n, "state": if n % 2 == 0 { "even" } else { "odd" }})))
        .collect();
    store.insert_many("things", many).await.unwrap();
    let odd = store
        .list("things", &Filter::all().eq("state", "odd"), page())
        .await
        .unwrap();
    assert_eq!(odd.total, 5_000);
    // A batch whose last document clashes stores none of it.
    let clash = vec![
        doc(json!({"id": "x1", "number": -1})),
        doc(json!({"id": "x2", "number": 5})),
    ];
    let err = store.insert_many("things", clash).await;
    assert!(matches!(err, Err(StoreError::Duplicate { .. })), "{err:?}");
    assert_eq!(store.get("things", "x1").await.unwrap(), None);
    // As does one that repeats a value within itself.
    let twice = vec![
        doc(json!({"id": "y1", "number": -5})),
        doc(json!({"id": "y2", "number": -5})),
    ];
    assert!(store.insert_many("things", twice).await.is_err());
    assert_eq!(store.get("things", "y1").await.unwrap(), None);
}
