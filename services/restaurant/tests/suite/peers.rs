//! A peer that is slow, broken or down costs at most the timeout and answers 503 or 502, never a hang.
//! The services are called in-process through their `AppHandle`; the peers are real sockets.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brigade_kit::peer::PeerTimeouts;
use brigade_kit::service::{build, ServiceConfig};
use brigade_kit::store::{StoreConfig, StoreKind};
use brigade_kit::{AppHandle, Method, RawRequest, Reply};
use brigade_restaurant::ServiceName;
use serde_json::{json, Value};

/// A fake waiter service: accepts connections and answers each request with `answer` (or never).
fn fake_peer(answer: Option<&'static str>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf);
                match answer {
                    Some(a) => {
                        let _ = conn.write_all(a.as_bytes());
                    }
                    None => std::thread::sleep(Duration::from_secs(30)),
                }
            });
        }
    });
    format!("http://{addr}")
}

async fn tables_with_waiter_at(url: String) -> Arc<dyn AppHandle> {
    let config = ServiceConfig {
        runtime: "test".into(),
        store: StoreKind::Memory,
        store_config: StoreConfig::default(),
        database_prefix: String::new(),
        peers: HashMap::from([("waiter".to_string(), url)]),
        peer_timeouts: PeerTimeouts {
            connect: Duration::from_millis(200),
            request: Duration::from_millis(400),
        },
        metrics: true,
        peer_transport: Default::default(),
    };
    build(&ServiceName::Tables, &config).await.unwrap().app
}

async fn call(app: &Arc<dyn AppHandle>, method: Method, path: &str, body: Value) -> (Reply, Value) {
    let found = app.matcher().at(path).unwrap();
    let endpoint = &app.endpoints()[*found.value];
    let route = endpoint.route_for(method).unwrap();
    let request = RawRequest {
        path: path.to_string(),
        content_type: Some("application/json".into()),
        body: body.to_string().into(),
        ..Default::default()
    };
    let reply = app.call(route, request).await;
    let json = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
    (reply, json)
}

async fn seat_with_waiter_at(url: String) -> (u16, String, Duration) {
    let app = tables_with_waiter_at(url).await;
    let (_, table) = call(
        &app,
        Method::Post,
        "/tables",
        json!({"number": 1, "seats": 4}),
    )
    .await;
    let path = format!("/tables/{}/seat", table["id"].as_str().unwrap());
    let started = Instant::now();
    let (reply, body) = call(
        &app,
        Method::Post,
        &path,
        json!({"party_size": 2, "waiter_id": "w1"}),
    )
    .await;
    (
        reply.status,
        body["error"]["code"].as_str().unwrap_or("").to_string(),
        started.elapsed(),
    )
}

#[tokio::test]
async fn a_waiter_service_that_never_answers_is_503_within_the_timeout() {
    let (status, code, took) = seat_with_waiter_at(fake_peer(None)).await;
    assert_eq!((status, code.as_str()), (503, "unavailable"));
    assert!(took < Duration::from_millis(1500), "took {took:?}");
}

#[tokio::test]
async fn a_waiter_service_that_is_down_is_503_at_once() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again
    let (status, _, took) = seat_with_waiter_at(format!("http://127.0.0.1:{port}")).await;
    assert_eq!(status, 503);
    assert!(took < Duration::from_millis(1500), "took {took:?}");
}

#[tokio::test]
async fn a_waiter_service_answering_500_or_garbage_is_502() {
    let broken = "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 2\r\n\r\n{}";
    let (status, code, _) = seat_with_waiter_at(fake_peer(Some(broken))).await;
    assert_eq!((status, code.as_str()), (502, "bad_gateway"));
    let garbage = "HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nnot json!";
    let (status, _, _) = seat_with_waiter_at(fake_peer(Some(garbage))).await;
    assert_eq!(status, 502);
    let not_http = "SSH-2.0-OpenSSH\r\n";
    let (status, _, _) = seat_with_waiter_at(fake_peer(Some(not_http))).await;
    assert!(status == 502 || status == 503, "{status}");
}

#[tokio::test]
async fn a_waiter_service_saying_404_makes_the_seat_422() {
    let missing =
        "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
    let (status, code, _) = seat_with_waiter_at(fake_peer(Some(missing))).await;
    assert_eq!((status, code.as_str()), (422, "unprocessable"));
}

/// A fake waiter service that sends the head of each request it gets to `heads`, then answers
/// like a real one: the waiter exists and is active.
fn recording_waiter(heads: std::sync::mpsc::Sender<String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let heads = heads.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let n = conn.read(&mut buf).unwrap_or(0);
                let _ = heads.send(String::from_utf8_lossy(&buf[..n]).to_lowercase());
                let body = r#"{"id":"w1","name":"Ann","shift":"morning","active":true}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(answer.as_bytes());
            });
        }
    });
    format!("http://{addr}")
}

/// The `x-brigade-budget-ms` a request head carried, in milliseconds.
fn budget_in(head: &str) -> Option<u64> {
    head.lines()
        .find_map(|l| l.strip_prefix("x-brigade-budget-ms:"))
        .and_then(|v| v.trim().parse().ok())
}

#[tokio::test]
async fn a_seat_tells_the_waiter_service_at_most_what_its_own_caller_left_it() {
    let (heads, seen) = std::sync::mpsc::channel();
    let app = tables_with_waiter_at(recording_waiter(heads)).await;
    let mut tables = Vec::new();
    for number in [1, 2] {
        let (_, table) = call(
            &app,
            Method::Post,
            "/tables",
            json!({"number": number, "seats": 4}),
        )
        .await;
        tables.push(table["id"].as_str().unwrap().to_string());
    }
    let seat = |table: &str, budget: Option<&str>| {
        let found = app.matcher().at("/tables/x/seat").unwrap();
        let route = app.endpoints()[*found.value]
            .route_for(Method::Post)
            .unwrap();
        let request = RawRequest {
            path: format!("/tables/{table}/seat"),
            content_type: Some("application/json".into()),
            body: json!({"party_size": 2, "waiter_id": "w1"})
                .to_string()
                .into(),
            budget: budget.map(str::to_string),
            ..Default::default()
        };
        app.call(route, request)
    };
    // With 300 ms left of its caller's budget, the call waits less than its own 400 ms timeout
    // and says so to the waiter service.
    let reply = seat(&tables[0], Some("300")).await;
    assert_eq!(
        reply.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&reply.body)
    );
    let told = budget_in(&seen.recv().unwrap()).expect("a budget header");
    assert!(told > 0 && told < 300, "told {told}");
    // A caller with no time left gets a 503 at once, and the waiter service is not asked.
    let reply = seat(&tables[1], Some("0")).await;
    assert_eq!(
        reply.status,
        503,
        "{:?}",
        String::from_utf8_lossy(&reply.body)
    );
    assert!(seen.try_recv().is_err(), "the waiter service was asked");
}
