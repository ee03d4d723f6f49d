//! Hostile input, fuzzed: generated requests for every route of every service, through the kit's
//! dispatch in-process (the same `AppHandle::call` every runtime adapter calls), on the memory and
//! embedded stores and on MongoDB when `MONGODB_URI` is set. Path ids, query strings and bodies
//! are drawn from arbitrary text and bytes, JSON of any shape, and values that look like database
//! operators (`$where`, `{"$gt":""}`, dotted keys, `$`-prefixed keys): no request may panic or answer
//! 500. Beside the coverage-guided targets in `fuzz/` (cargo-fuzz, docs/reliability.md): proptest's
//! generators are not coverage-guided, so the operator-shaped values are seeded by hand where a
//! coverage-guided fuzzer would have to find them (`docs/reliability.md` records the executions).
//!
//! Cases per store: `PROPTEST_CASES` (default 400 here; the long form in the docs runs 100,000).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use brigade_kit::http::{pattern_segments, BodyKind, Segment};
use brigade_kit::peer::PeerTimeouts;
use brigade_kit::service::{build, ServiceConfig};
use brigade_kit::store::{StoreConfig, StoreKind};
use brigade_kit::{AppHandle, RawRequest};
use brigade_restaurant::ServiceName;
use proptest::prelude::*;
use serde_json::Value;

/// Values a coverage-guided fuzzer would have to find: database operators, dotted and `$` keys,
/// path tricks, control characters and very long text.
const HOSTILE: &[&str] = &[
    "$where",
    "{\"$gt\":\"\"}",
    "{\"$ne\":null}",
    "a.b",
    "$set",
    "..",
    "%00",
    "\u{0}",
    "'; db.dropDatabase(); '",
    "__proto__",
    "-1",
    "18446744073709551616",
    "NaN",
    "",
    " ",
    "ünïcødé ✓",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(HOSTILE).prop_map(str::to_owned),
        "\\PC{0,24}",
        "[a-z0-9-]{1,40}",
        Just("x".repeat(5000)),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        prop::sample::select(
                            &[
                                "name",
                                "shift",
                                "active",
                                "number",
                                "seats",
                                "party_size",
                                "waiter_id",
                                "table_id",
                                "items",
                                "dish",
                                "qty",
                                "notes",
                                "status",
                                "$where",
                                "$set",
                                "a.b",
                                "_id",
                                "id"
                            ][..]
                        )
                        .prop_map(str::to_owned),
                        text(),
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => json().prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..200),
        1 => Just(b"{\"name\": \"x\", \"shift\": \"night\", \"name\": 1}".to_vec()),
    ]
}

fn query() -> impl Strategy<Value = Option<String>> {
    let key = prop_oneof![
        prop::sample::select(
            &["limit", "offset", "shift", "status", "table_id", "$where", "a.b"][..]
        )
        .prop_map(str::to_owned),
        text(),
    ];
    prop::option::of(prop::collection::vec((key, text()), 0..4).prop_map(|kv| {
        kv.into_iter()
            .map(|(k, v)| format!("{}={}", enc(&k), enc(&v)))
            .collect::<Vec<_>>()
            .join("&")
    }))
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// One generated request: which route (an index into all routes), its parameters, query, body.
#[derive(Debug, Clone)]
struct Case {
    route: usize,
    params: Vec<String>,
    query: Option<String>,
    body: Vec<u8>,
    json_type: bool,
}

fn case(routes: usize) -> impl Strategy<Value = Case> {
    (
        0..routes,
        prop::collection::vec(text(), 2),
        query(),
        body(),
        prop::bool::weighted(0.9),
    )
        .prop_map(|(route, params, query, body, json_type)| Case {
            route,
            params,
            query,
            body,
            json_type,
        })
}

fn config(store: StoreKind, dir: &std::path::Path, mongodb_uri: Option<String>) -> ServiceConfig {
    ServiceConfig {
        runtime: "fuzz".into(),
        store,
        store_config: StoreConfig {
            data_dir: dir.to_path_buf(),
            mongodb_uri,
            timeout: Duration::from_secs(5),
            cache_bytes: None,
            concurrency: 0,
            writers: 0,
        },
        database_prefix: format!("fz{}_", &brigade_kit::store::new_id()[24..]),
        metrics: true,
        peer_transport: Default::default(),
        // Peers that refuse: every call to one is a 503, never a 500.
        peers: HashMap::from([
            ("waiter".to_string(), "http://127.0.0.1:9".to_string()),
            ("tables".to_string(), "http://127.0.0.1:9".to_string()),
        ]),
        peer_timeouts: PeerTimeouts {
            connect: Duration::from_millis(200),
            request: Duration::from_millis(400),
        },
    }
}

fn fuzz(store: StoreKind, mongodb_uri: Option<String>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = config(store, dir.path(), mongodb_uri);
    let apps: Vec<Arc<dyn AppHandle>> = ServiceName::ALL
        .iter()
        .map(|s| rt.block_on(build(s, &config)).unwrap().app)
        .collect();
    // Every route of every service: (app, route index).
    let routes: Vec<(usize, usize)> = apps
        .iter()
        .enumerate()
        .flat_map(|(a, app)| (0..app.routes().len()).map(move |r| (a, r)))
        .collect();
    let executions = AtomicU64::new(0);
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(400);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&case(routes.len()), |c| {
        let (a, r) = routes[c.route];
        let app = &apps[a];
        let spec = &app.routes()[r];
        // The parameters percent-encoded into the path (a space as `%20`: the kit keeps `+`).
        let mut values = c.params.iter();
        let path: String = pattern_segments(spec.path)
            .into_iter()
            .map(|s| match s {
                Segment::Param(_) => {
                    enc(values.next().map_or("", String::as_str)).replace('+', "%20")
                }
                Segment::Literal(l) => l.to_string(),
            })
            .fold(String::new(), |path, segment| path + "/" + &segment);
        let content_type =
            (c.json_type || spec.body == BodyKind::Json).then(|| "application/json".to_owned());
        let request = RawRequest {
            path,
            query: c.query.clone(),
            content_type,
            body: c.body.clone().into(),
            // Any text as a trace context too: a bad one must be replaced, never fail the call.
            traceparent: c.query.clone(),
            // And as a caller's budget: one that does not parse is ignored.
            budget: c.query.clone(),
        };
        let reply = rt.block_on(app.call(r, request));
        executions.fetch_add(1, Ordering::Relaxed);
        prop_assert!(
            reply.status != 500,
            "{} {} answered 500 to {:?}: {}",
            spec.method,
            spec.path,
            c,
            String::from_utf8_lossy(&reply.body)
        );
        Ok(())
    });
    println!(
        "hostile input on {store}: {} executions over {} routes",
        executions.load(Ordering::Relaxed),
        routes.len()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn no_generated_request_panics_or_answers_500_on_the_memory_store() {
    fuzz(StoreKind::Memory, None);
}

#[test]
fn no_generated_request_panics_or_answers_500_on_the_embedded_store() {
    fuzz(StoreKind::Embedded, None);
}

#[test]
fn no_generated_request_panics_or_answers_500_on_mongodb() {
    let compiled = StoreKind::compiled().contains(&StoreKind::Mongo);
    match std::env::var("MONGODB_URI") {
        Ok(uri) if compiled => fuzz(StoreKind::Mongo, Some(uri)),
        _ => brigade_kit::skip::skip_mongo(
            "hostile input on MongoDB needs MONGODB_URI and the mongo feature",
        ),
    }
}
