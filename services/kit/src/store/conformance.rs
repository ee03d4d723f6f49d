//! The conformance checks every backend passes: atomic conditions, unique keys, paging, appends.
//! Backends' own tests call [`run`] with a fresh store.

use std::sync::Arc;

use serde_json::Value;

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
    let (a, b) = (new_id(), new_id());
    insert_two(&*store, &a, &b).await;
    unique_keys(&*store).await;
    gets(&*store, &a).await;
    lists(&*store, &a, &b).await;
    racing_updates(&store, &a).await;
    appends(&*store, &b).await;
    unique_changes(&*store, &b).await;
    conditional_deletes(&*store, &a).await;
    store.ping().await.unwrap();
}

/// Two documents, `a` free and `b` busy, with unique numbers 1 and 2.
async fn insert_two(store: &dyn Store, a: &str, b: &str) {
    let c = SPEC.name;
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
}

/// Unique keys: a second document with a taken number is refused.
async fn unique_keys(store: &dyn Store) {
    let c = SPEC.name;
    let dup = store
        .insert(
            c,
            doc(json!({"id": new_id(), "number": 1, "state": "free"})),
        )
        .await;
    assert!(matches!(dup, Err(StoreError::Duplicate { .. })), "{dup:?}");
}

/// Get, and ids that look like operators.
async fn gets(store: &dyn Store, a: &str) {
    let c = SPEC.name;
    assert_eq!(store.get(c, a).await.unwrap().unwrap()["number"], json!(1));
    assert_eq!(store.get(c, "$gt").await.unwrap(), None);
    assert_eq!(store.get(c, "{\"$ne\":1}").await.unwrap(), None);
}

/// Lists: order, filter, paging, totals.
async fn lists(store: &dyn Store, a: &str, b: &str) {
    let c = SPEC.name;
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
    assert_eq!((busy.total, doc_id(&busy.items[0])), (1, b));
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
        (2, 1, b)
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
}

/// Conditional update: exactly one of many racing writers wins; a missing document is missing.
async fn racing_updates(store: &Arc<dyn Store>, a: &str) {
    let c = SPEC.name;
    let mut racers = Vec::new();
    for i in 0..20 {
        let s = store.clone();
        let id = a.to_owned();
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
}

/// Appends keep every value, in order.
async fn appends(store: &dyn Store, b: &str) {
    let c = SPEC.name;
    for n in 0..5 {
        store
            .update(
                c,
                b,
                &Filter::all(),
                &Change::default().push("log", vec![json!(n)]),
            )
            .await
            .unwrap();
    }
    let grown = store.get(c, b).await.unwrap().unwrap();
    assert_eq!(grown["log"], json!([0, 1, 2, 3, 4]));
}

/// A unique field may not be changed onto a taken value.
async fn unique_changes(store: &dyn Store, b: &str) {
    let c = SPEC.name;
    let clash = store
        .update(c, b, &Filter::all(), &Change::default().set("number", 1))
        .await;
    assert!(
        matches!(clash, Err(StoreError::Duplicate { .. })),
        "{clash:?}"
    );
}

/// Conditional delete, and the freed unique value is usable again.
async fn conditional_deletes(store: &dyn Store, a: &str) {
    let c = SPEC.name;
    let refused = store
        .delete(c, a, &Filter::all().eq("state", "free"))
        .await
        .unwrap();
    assert!(matches!(refused, Outcome::Refused(_)));
    let done = store
        .delete(c, a, &Filter::all().eq("state", "busy"))
        .await
        .unwrap();
    assert!(matches!(done, Outcome::Done(_)));
    assert_eq!(
        store.delete(c, a, &Filter::all()).await.unwrap(),
        Outcome::Missing
    );
    store
        .insert(
            c,
            doc(json!({"id": new_id(), "number": 1, "state": "free"})),
        )
        .await
        .unwrap();
}
