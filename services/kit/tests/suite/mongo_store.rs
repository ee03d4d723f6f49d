//! The store conformance checks on MongoDB (or FerretDB), found by `testing::mongo_uri()`:
//! `MONGODB_URI`, else a `mongo:7` container, else a loud skip (a failure under `BRIGADE_REQUIRE_MONGO=1`).
//! Run: `bash scripts/ferretdb.sh start` then
//! `MONGODB_URI=mongodb://127.0.0.1:27017/ cargo test -p brigade-kit --features testing --test suite mongo_store::`.

use std::sync::Arc;
use std::time::Duration;

use brigade_kit::store::conformance;
use brigade_kit::store::mongo::testing::{mongo_uri, unique_database};
use brigade_kit::store::mongo::MongoStore;
use brigade_kit::store::{Change, CollectionSpec, Filter, Outcome, Page, Store, StoreError};
use serde_json::{json, Value};

async fn fresh_store(specs: &[CollectionSpec]) -> Option<Arc<MongoStore>> {
    let uri = mongo_uri().await?;
    let db = unique_database("brigade_store");
    let store = MongoStore::connect(&uri, &db, specs, Duration::from_secs(5))
        .await
        .expect("connecting to MongoDB");
    Some(Arc::new(store))
}

fn doc(v: Value) -> brigade_kit::store::Doc {
    v.as_object().cloned().expect("an object")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mongo_store_passes_the_store_conformance_checks() {
    let Some(store) = fresh_store(&[conformance::SPEC]).await else {
        return;
    };
    conformance::run(store.clone()).await;
    store.drop_database().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_of_fifty_concurrent_conditional_updates_wins() {
    let Some(store) = fresh_store(&[conformance::SPEC]).await else {
        return;
    };
    let c = conformance::SPEC.name;
    let id = brigade_kit::store::new_id();
    store
        .insert(c, doc(json!({"id": id, "number": 7, "state": "free"})))
        .await
        .unwrap();
    let mut racers = Vec::new();
    for i in 0..50 {
        let s = store.clone();
        let id = id.clone();
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
    let mut winners = Vec::new();
    for r in racers {
        if let Outcome::Done(d) = r.await.unwrap() {
            winners.push(d["by"].clone());
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    let stored = store.get(c, &id).await.unwrap().unwrap();
    assert_eq!(stored["by"], winners[0]);
    store.drop_database().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_to_one_document_all_land() {
    let Some(store) = fresh_store(&[conformance::SPEC]).await else {
        return;
    };
    let c = conformance::SPEC.name;
    store
        .insert(
            c,
            doc(json!({"id": "o", "number": 1, "state": "queued", "items": []})),
        )
        .await
        .unwrap();
    let mut appenders = Vec::new();
    for i in 0..40 {
        let s = store.clone();
        appenders.push(tokio::spawn(async move {
            let change = Change::default().push("items", vec![json!(i), json!(i + 1000)]);
            s.update(
                c,
                "o",
                &Filter::all().one_of("state", ["queued", "cooking"]),
                &change,
            )
            .await
            .unwrap()
        }));
    }
    for a in appenders {
        assert!(matches!(a.await.unwrap(), Outcome::Done(_)));
    }
    let items = store.get(c, "o").await.unwrap().unwrap()["items"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(items.len(), 80, "lost appends: {items:?}");
    for pair in items.chunks(2) {
        assert_eq!(
            pair[1].as_i64().unwrap(),
            pair[0].as_i64().unwrap() + 1000,
            "an append was split: {items:?}"
        );
    }
    store.drop_database().await.unwrap();
}

#[tokio::test]
async fn documents_come_back_as_the_json_that_went_in() {
    let Some(store) = fresh_store(&[conformance::SPEC]).await else {
        return;
    };
    let c = conformance::SPEC.name;
    let id = brigade_kit::store::new_id();
    let original = doc(json!({
        "id": id, "number": 9_007_199_254_740_993_i64, "state": "free", "ratio": 0.25, "none": null,
        "items": [{"dish": "soup", "qty": 2, "notes": "no salt"}], "nested": {"a": [1, "two", true]},
        "created_at": "2024-01-01T00:00:00Z"
    }));
    store.insert(c, original.clone()).await.unwrap();
    let back = store.get(c, &id).await.unwrap().unwrap();
    assert_eq!(back, original);
    assert!(
        back["number"].is_i64(),
        "integers stay integers: {:?}",
        back["number"]
    );
    let listed = store
        .list(
            c,
            &Filter::all().eq("id", id.as_str()),
            Page {
                offset: 0,
                limit: 5,
            },
        )
        .await
        .unwrap();
    assert_eq!(listed.items, vec![original]);
    store.drop_database().await.unwrap();
}

#[tokio::test]
async fn operator_shaped_values_are_matched_literally() {
    let Some(store) = fresh_store(&[conformance::SPEC]).await else {
        return;
    };
    let c = conformance::SPEC.name;
    store
        .insert(c, doc(json!({"id": "a", "number": 1, "state": "free"})))
        .await
        .unwrap();
    let sneaky = Filter::all().eq("state", json!({"$ne": "nothing"}));
    let listed = store
        .list(
            c,
            &sneaky,
            Page {
                offset: 0,
                limit: 5,
            },
        )
        .await
        .unwrap();
    assert_eq!(listed.total, 0);
    let refused = store
        .update(c, "a", &sneaky, &Change::default().set("state", "busy"))
        .await
        .unwrap();
    assert!(matches!(refused, Outcome::Refused(_)), "{refused:?}");
    store.drop_database().await.unwrap();
}

#[tokio::test]
async fn a_duplicate_names_the_unique_field_and_value() {
    let Some(store) = fresh_store(&[conformance::SPEC]).await else {
        return;
    };
    let c = conformance::SPEC.name;
    store
        .insert(c, doc(json!({"id": "a", "number": 5, "state": "free"})))
        .await
        .unwrap();
    let err = store
        .insert(c, doc(json!({"id": "b", "number": 5, "state": "free"})))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::Duplicate {
            field: "number".into(),
            value: "5".into()
        }
    );
    let same_id = store
        .insert(c, doc(json!({"id": "a", "number": 6, "state": "free"})))
        .await
        .unwrap_err();
    assert_eq!(
        same_id,
        StoreError::Duplicate {
            field: "id".into(),
            value: "\"a\"".into()
        }
    );
    store
        .insert(c, doc(json!({"id": "c", "number": 6, "state": "free"})))
        .await
        .unwrap();
    let moved = store
        .update(c, "c", &Filter::all(), &Change::default().set("number", 5))
        .await
        .unwrap_err();
    assert_eq!(
        moved,
        StoreError::Duplicate {
            field: "number".into(),
            value: "5".into()
        }
    );
    store.drop_database().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable_within_the_timeout() {
    // A port nothing listens on: connecting must fail as Unavailable, promptly.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let started = std::time::Instant::now();
    let result = MongoStore::connect(
        &format!("mongodb://127.0.0.1:{port}/"),
        "brigade_unreachable",
        &[conformance::SPEC],
        Duration::from_millis(500),
    )
    .await;
    assert!(
        matches!(result, Err(StoreError::Unavailable(_))),
        "{:?}",
        result.err()
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn indexed_fields_get_compound_indexes_that_serve_filter_and_id_order() {
    let Some(uri) = mongo_uri().await else {
        return;
    };
    let Some(store) = fresh_store(&[conformance::SPEC]).await else {
        return;
    };
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let db = client.database(store.database_name());
    let listed = db
        .run_command(mongodb::bson::doc! { "listIndexes": conformance::SPEC.name })
        .await
        .unwrap();
    let batch = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let keys: Vec<mongodb::bson::Document> = batch
        .iter()
        .filter_map(|b| b.as_document())
        .map(|d| d.get_document("key").unwrap().clone())
        .collect();
    let wanted = mongodb::bson::doc! { "state": 1, "_id": 1 };
    assert!(
        keys.iter().any(|k| {
            k.keys().collect::<Vec<_>>() == ["state", "_id"]
                && k.values()
                    .all(|v| v.as_i32() == Some(1) || v.as_i64() == Some(1))
        }),
        "no {wanted} among {keys:?}"
    );
    assert!(
        keys.iter()
            .any(|k| k.keys().collect::<Vec<_>>() == ["number"]),
        "no unique index on number among {keys:?}"
    );
    store.drop_database().await.unwrap();
}

#[tokio::test]
async fn insert_many_stores_every_document_or_a_prefix_and_size_on_disk_grows() {
    let Some(store) = fresh_store(&[conformance::SPEC]).await else {
        return;
    };
    let c = conformance::SPEC.name;
    let empty = store.size_on_disk().await.unwrap();
    assert!(empty.is_some(), "dbStats gave no size");
    let many: Vec<_> = (0..500)
        .map(|n| doc(json!({"id": format!("{n:04}"), "number": n, "state": "bulk", "pad": "x".repeat(200)})))
        .collect();
    store.insert_many(c, many).await.unwrap();
    let page = Page {
        offset: 490,
        limit: 20,
    };
    let listed = store
        .list(c, &Filter::all().eq("state", "bulk"), page)
        .await
        .unwrap();
    assert_eq!((listed.total, listed.items.len()), (500, 10));
    // Ordered: the documents before the clash are stored, the clash and those after it are not.
    let clash = vec![
        doc(json!({"id": "p1", "number": 1000})),
        doc(json!({"id": "p2", "number": 7})),
        doc(json!({"id": "p3", "number": 1001})),
    ];
    let err = store.insert_many(c, clash).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Duplicate { field, .. } if field == "number"),
        "{err:?}"
    );
    assert!(store.get(c, "p1").await.unwrap().is_some());
    assert!(store.get(c, "p3").await.unwrap().is_none());
    let full = store.size_on_disk().await.unwrap().unwrap();
    brigade_kit::store::mongo::testing::loud(&format!(
        "mongo size_on_disk: {empty:?} empty, {full} after 501 documents"
    ));
    assert!(full > 0);
    store.drop_database().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn list_totals_are_right_whether_the_page_tells_them_or_a_count_does() {
    let Some(store) = fresh_store(&[conformance::SPEC]).await else {
        return;
    };
    let c = conformance::SPEC.name;
    let docs: Vec<_> = (0..7)
        .map(|i| doc(json!({"id": format!("id{i}"), "number": i, "state": if i < 5 { "free" } else { "busy" }})))
        .collect();
    store.insert_many(c, docs).await.unwrap();
    let free = Filter::all().eq("state", "free");
    // (filter, offset, limit) → (items, total): short pages (the total from the page), full pages
    // and empty pages past the end (the total from a count).
    let cases = [
        (Filter::all(), 0, 3, 3, 7),
        (Filter::all(), 0, 10, 7, 7),
        (Filter::all(), 5, 10, 2, 7),
        (Filter::all(), 9, 10, 0, 7),
        (free.clone(), 0, 5, 5, 5),
        (free.clone(), 0, 50, 5, 5),
        (free.clone(), 3, 2, 2, 5),
        (free.clone(), 4, 50, 1, 5),
        (free.clone(), 20, 5, 0, 5),
        (Filter::all().eq("state", "gone"), 0, 5, 0, 0),
        (Filter::all().eq("state", "gone"), 3, 5, 0, 0),
        (Filter::all(), 0, 0, 0, 7),
    ];
    for (filter, offset, limit, items, total) in cases {
        let page = Page { offset, limit };
        let listed = store.list(c, &filter, page).await.unwrap();
        let json = store.list_json(c, &filter, page).await.unwrap();
        assert_eq!(
            (listed.items.len(), listed.total),
            (items, total),
            "{filter:?} offset {offset} limit {limit}"
        );
        assert_eq!(json.decode().unwrap(), listed);
    }
    store.drop_database().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn far_more_concurrent_operations_than_places_on_the_wire_all_get_their_answer() {
    let Some(uri) = mongo_uri().await else {
        return;
    };
    let limits = brigade_kit::store::mongo::MongoLimits {
        timeout: Duration::from_secs(30),
        concurrency: 1,
        writers: 1,
    };
    let store = Arc::new(
        MongoStore::connect_with(
            &uri,
            &unique_database("brigade_line"),
            &[conformance::SPEC],
            limits,
        )
        .await
        .unwrap(),
    );
    assert_eq!(store.concurrency(), (1, 1));
    let c = conformance::SPEC.name;
    let mut calls = Vec::new();
    for i in 0..40 {
        let s = store.clone();
        calls.push(tokio::spawn(async move {
            let id = format!("id{i}");
            s.insert(c, doc(json!({"id": id, "number": i}))).await?;
            s.get_json(c, &id).await
        }));
    }
    for call in calls {
        let found = call.await.unwrap().expect("queued, not refused");
        assert!(found.is_some());
    }
    // A caller whose budget is spent is answered at once, without asking the server.
    let spent = brigade_kit::deadline::scope(Some(Duration::ZERO), store.get(c, "id0")).await;
    assert!(
        matches!(spent, Err(StoreError::Unavailable(_))),
        "{spent:?}"
    );
    store.drop_database().await.unwrap();
}

/// The threads the driver sent its commands from, as its command monitoring saw them: each
/// command's name and the thread that ran the operation sending it.
type Senders = Arc<std::sync::Mutex<Vec<(String, std::thread::ThreadId)>>>;

/// The options for `uri` with command monitoring that records [`Senders`].
async fn recording_senders(uri: &str) -> (mongodb::options::ClientOptions, Senders) {
    use mongodb::event::command::CommandEvent;
    use mongodb::event::EventHandler;
    let mut options = mongodb::options::ClientOptions::parse(uri).await.unwrap();
    let senders = Senders::default();
    let seen = senders.clone();
    options.command_event_handler = Some(EventHandler::callback(move |e: CommandEvent| {
        if let CommandEvent::Started(started) = e {
            let here = std::thread::current().id();
            seen.lock().unwrap().push((started.command_name, here));
        }
    }));
    (options, senders)
}

/// One of each kind of operation (insert, read, list, conditional update and delete, ping).
async fn one_of_each(store: &MongoStore) {
    let c = conformance::SPEC.name;
    store
        .insert(c, doc(json!({"id": "t", "number": 1, "state": "free"})))
        .await
        .unwrap();
    assert!(store.get_json(c, "t").await.unwrap().is_some());
    let listed = store
        .list(
            c,
            &Filter::all().eq("state", "free"),
            Page {
                offset: 0,
                limit: 5,
            },
        )
        .await
        .unwrap();
    assert_eq!(listed.total, 1);
    let busy = Change::default().set("state", "busy");
    let updated = store
        .update(c, "t", &Filter::all().eq("state", "free"), &busy)
        .await
        .unwrap();
    assert!(matches!(updated, Outcome::Done(_)));
    let deleted = store.delete(c, "t", &Filter::all()).await.unwrap();
    assert!(matches!(deleted, Outcome::Done(_)));
    store.ping().await.unwrap();
}

/// The commands in `senders` sent from a thread not in `serving`, and how many were sent at all.
fn sent_elsewhere(
    senders: &Senders,
    serving: &[std::thread::ThreadId],
) -> (Vec<(String, std::thread::ThreadId)>, usize) {
    let seen = senders.lock().unwrap();
    let elsewhere = seen
        .iter()
        .filter(|(_, t)| !serving.contains(t))
        .cloned()
        .collect();
    (elsewhere, seen.len())
}

#[tokio::test]
async fn on_a_current_thread_runtime_the_driver_sends_every_command_from_the_calling_thread() {
    let Some(uri) = mongo_uri().await else {
        return;
    };
    let (options, senders) = recording_senders(&uri).await;
    let store = MongoStore::connect_with_options(
        options,
        &unique_database("brigade_thread"),
        &[conformance::SPEC],
        brigade_kit::store::mongo::MongoLimits::with_timeout(Duration::from_secs(5)),
    )
    .await
    .unwrap();
    one_of_each(&store).await;
    let (elsewhere, all) = sent_elsewhere(&senders, &[std::thread::current().id()]);
    assert!(all >= 6, "commands seen: {all}");
    assert!(
        elsewhere.is_empty(),
        "commands sent from another thread than the caller's: {elsewhere:?}"
    );
    assert_eq!(store.handed_over(), 0);
    assert_eq!(store.clients(), 1);
    store.drop_database().await.unwrap();
}

#[test]
fn on_a_multi_thread_runtime_the_driver_sends_every_command_from_that_runtimes_threads() {
    // Its workers only: the thread in `block_on` runs none of its tasks, so it hands over too.
    let workers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let started = workers.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || started.lock().unwrap().push(std::thread::current().id()))
        .build()
        .unwrap();
    rt.block_on(async {
        let Some(uri) = mongo_uri().await else {
            return;
        };
        let (options, senders) = recording_senders(&uri).await;
        let store = MongoStore::connect_with_options(
            options,
            &unique_database("brigade_thread"),
            &[conformance::SPEC],
            brigade_kit::store::mongo::MongoLimits::with_timeout(Duration::from_secs(5)),
        )
        .await
        .unwrap();
        let store = Arc::new(store);
        let s = store.clone();
        tokio::spawn(async move { one_of_each(&s).await })
            .await
            .unwrap();
        assert_eq!(store.clients(), 1, "the runtime's workers share its client");
        let serving = workers.lock().unwrap().clone();
        let (elsewhere, all) = sent_elsewhere(&senders, &serving);
        assert!(all >= 6, "commands seen: {all}");
        assert!(
            elsewhere.is_empty(),
            "commands sent from a thread not of the serving runtime: {elsewhere:?}"
        );
        store.drop_database().await.unwrap();
    });
}

#[test]
fn a_caller_without_a_tokio_runtime_is_answered_through_the_driver_thread() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let Some(store) = rt.block_on(fresh_store(&[conformance::SPEC])) else {
        return;
    };
    // A thread with no runtime of its own, polling with a plain executor.
    let s = store.clone();
    std::thread::spawn(move || futures::executor::block_on(one_of_each(&s)))
        .join()
        .expect("answered without a runtime");
    assert!(store.handed_over() >= 6, "{}", store.handed_over());
    assert_eq!(store.clients(), 2, "the opener's, and the driver thread's");
    rt.block_on(store.drop_database()).unwrap();
}

#[tokio::test]
async fn each_runtime_gets_one_client_shared_by_its_threads_and_closing_after_one_ended_returns() {
    let Some(store) = fresh_store(&[conformance::SPEC]).await else {
        return;
    };
    // A multi-thread runtime: its workers share one client.
    let s = store.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let calls: Vec<_> = (0..8)
                .map(|i| {
                    let s = s.clone();
                    tokio::spawn(async move {
                        s.get_json(conformance::SPEC.name, &format!("{i}")).await
                    })
                })
                .collect();
            for call in calls {
                assert!(call.await.unwrap().unwrap().is_none());
            }
            assert_eq!(s.clients(), 2, "the opener's and this runtime's");
        });
        // The runtime ends here, and its client with it.
    })
    .join()
    .unwrap();
    assert_eq!(
        store.clients(),
        1,
        "the client of a runtime that ended is forgotten"
    );
    // A current-thread runtime on a thread of its own, still running while the store closes.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (ready, answered) = tokio::sync::oneshot::channel();
    let s = store.clone();
    let worker = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            one_of_each(&s).await;
            let _ = ready.send(s.clients());
            let _ = stopped.await;
        });
    });
    assert_eq!(answered.await.unwrap(), 2);
    store.drop_database().await.unwrap();
    store.close().await.unwrap();
    let _ = stop.send(());
    worker.join().unwrap();
}

#[test]
fn a_caller_that_only_entered_a_runtime_others_drive_hands_its_operations_to_that_runtime() {
    // As ntex on io_uring does: its workers poll their own executor and only enter a small tokio
    // runtime (one worker thread of its own) for the kit.
    let kit_threads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let started = kit_threads.clone();
    let kit = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .on_thread_start(move || started.lock().unwrap().push(std::thread::current().id()))
        .build()
        .unwrap();
    let Some(uri) = kit.block_on(mongo_uri()) else {
        return;
    };
    let (options, senders) = kit.block_on(recording_senders(&uri));
    let store = Arc::new(
        kit.block_on(MongoStore::connect_with_options(
            options,
            &unique_database("brigade_entered"),
            &[conformance::SPEC],
            brigade_kit::store::mongo::MongoLimits::with_timeout(Duration::from_secs(5)),
        ))
        .unwrap(),
    );
    let before = store.handed_over();
    let (s, handle) = (store.clone(), kit.handle().clone());
    std::thread::spawn(move || {
        let _inside = handle.enter();
        futures::executor::block_on(one_of_each(&s));
    })
    .join()
    .expect("answered by the runtime it entered");
    assert!(store.handed_over() - before >= 6, "{}", store.handed_over());
    assert_eq!(
        store.clients(),
        1,
        "the entered runtime's client, no driver thread"
    );
    let kit_threads = kit_threads.lock().unwrap().clone();
    let (elsewhere, _) = sent_elsewhere(&senders, &kit_threads);
    assert!(
        elsewhere.is_empty(),
        "commands sent from a thread not of the entered runtime: {elsewhere:?}"
    );
    kit.block_on(store.drop_database()).unwrap();
}
