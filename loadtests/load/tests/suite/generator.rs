//! The generator against small in-test servers: counts, wire bytes, closed and open loop,
//! coordinated omission, error classification, setup and captured ids, the JSON result.
//!
//! Every assertion is on counts and on the order of events, never on how fast this machine is: a
//! busy 2-core CI box may send ten requests where a quiet one sends ten thousand, and only a lower
//! bound on a latency the server itself imposes (a stall, a timeout) is asserted.

mod protocols;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{self, Answer, Req};
use brigade_load::engine::{self, LoadConfig};
use brigade_load::scenario::Scenario;
use brigade_records::result::LoadResult;

pub(crate) fn config(url: &str) -> LoadConfig {
    LoadConfig {
        targets: BTreeMap::from([("*".to_string(), url.to_string())]),
        users: Some(2),
        duration: Some(Duration::from_millis(600)),
        warmup: Duration::from_millis(100),
        threads: 2,
        timeout: Duration::from_secs(2),
        ..LoadConfig::default()
    }
}

pub(crate) fn one_route(path: &str) -> Scenario {
    Scenario::parse(
        &format!("name = \"t\"\n[[request]]\npath = \"{path}\"\n"),
        "t",
    )
    .unwrap()
}

/// The exact bytes a hyper server answers `Hello, World!` with, read over a raw socket.
fn raw_response_len(addr: std::net::SocketAddr) -> usize {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /x HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    // The raw answer carries `connection: close`, which a kept-alive answer does not.
    buf.len() - "connection: close\r\n".len()
}

#[test]
fn a_closed_loop_counts_every_request_and_the_bytes_on_the_wire() {
    let server = support::hello();
    let result = engine::run(&config(&server.url()), &one_route("/bench/hello")).unwrap();
    let t = &result.total;
    assert!(t.requests > 0, "{t:?}");
    assert_eq!(t.ok, t.requests);
    assert_eq!(t.errors.total(), 0);
    assert_eq!(result.routes.len(), 1);
    assert_eq!(result.routes[0].requests, t.requests);
    assert_eq!(result.routes[0].name, "GET /bench/hello");
    // Request line and host header, nothing else: exactly what went out, per request.
    let sent = format!("GET /bench/hello HTTP/1.1\r\nhost: {}\r\n\r\n", server.addr).len() as u64;
    assert_eq!(t.bytes_sent, sent * t.requests);
    // Status line, headers and body, as read from the socket.
    let received = raw_response_len(server.addr) as u64;
    assert_eq!(t.bytes_received, received * t.requests);
    assert!((t.hits_per_s - t.requests as f64 / result.elapsed_s).abs() < 1e-6);
    assert!((result.elapsed_s - 0.6).abs() < 1e-9);
    assert!(
        t.latency.p50_ms > 0.0
            && t.latency.p50_ms <= t.latency.p99_ms
            && t.latency.p99_ms <= t.latency.max_ms
    );
    assert_eq!(result.settings.users, Some(2));
    assert_eq!(result.settings.threads, 2);
}

#[test]
fn a_request_count_bounds_the_run_and_warmup_is_not_counted() {
    let hits = Arc::new(AtomicU64::new(0));
    let h = hits.clone();
    let server = support::serve(move |_| {
        h.fetch_add(1, Ordering::Relaxed);
        async { Answer::Reply(200, "ok".into()) }
    });
    let cfg = LoadConfig {
        duration: None,
        requests: Some(300),
        warmup: Duration::from_millis(500),
        ..config(&server.url())
    };
    let result = engine::run(&cfg, &one_route("/")).unwrap();
    assert_eq!(result.total.requests, 300);
    // The server also saw the warm-up's requests (every user sends at least its first one then).
    assert!(hits.load(Ordering::Relaxed) > 300);
}

#[test]
fn without_keepalive_every_request_opens_its_own_connection() {
    let server = support::hello();
    let cfg = LoadConfig {
        keepalive: false,
        users: Some(1),
        threads: 1,
        ..config(&server.url())
    };
    let result = engine::run(&cfg, &one_route("/")).unwrap();
    assert_eq!(result.total.errors.total(), 0, "{:?}", result.total.errors);
    assert!(result.total.requests > 0);
    assert!(!result.settings.keepalive);
    // `Connection: close` goes out with every request.
    let sent = format!(
        "GET / HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
        server.addr
    )
    .len() as u64;
    assert_eq!(result.total.bytes_sent, sent * result.total.requests);
}

/// A server that freezes for 500 ms once, 300 ms into the run: every request that arrives during
/// the freeze waits for its end, as behind a stop-the-world pause.
fn stalling_server() -> support::TestServer {
    let origin = Arc::new(Mutex::new(None::<Instant>));
    support::serve(move |_| {
        let origin = origin.clone();
        async move {
            let now = Instant::now();
            let start = *origin.lock().unwrap().get_or_insert(now);
            let stall_from = start + Duration::from_millis(300);
            let stall_to = stall_from + Duration::from_millis(500);
            if now >= stall_from && now < stall_to {
                tokio::time::sleep_until(stall_to.into()).await;
            }
            Answer::Reply(200, "ok".into())
        }
    })
}

#[test]
fn open_loop_latency_shows_a_stall_that_closed_loop_hides() {
    let scenario = one_route("/");
    let base = LoadConfig {
        warmup: Duration::ZERO,
        duration: Some(Duration::from_millis(1500)),
        threads: 1,
        ..LoadConfig::default()
    };

    // Open loop: 1000 requests/s on a fixed schedule. The ~500 sends due during the stall wait for
    // it to end, and their latency counts from when they were due: 0 to 500 ms. Those due in its
    // first 250 ms (about 250 of them) wait at least 250 ms, and the 400 due in its first 400 ms at
    // least 100 ms: over a tenth of the 1500. A busy machine only adds to these latencies.
    let server = stalling_server();
    let open = LoadConfig {
        targets: BTreeMap::from([("*".into(), server.url())]),
        rate: Some(1000.0),
        connections: 10,
        ..base.clone()
    };
    let open = engine::run(&open, &scenario).unwrap();
    assert_eq!(open.total.requests, 1500, "every scheduled send is counted");
    let slow = |result: &LoadResult| {
        let h = result.total.histogram().unwrap();
        h.as_hdr().count_between(250_000, 100_000_000)
    };
    let open_slow = slow(&open);
    assert!(open_slow >= 200, "{open_slow} sends saw the stall");
    assert!(
        open.total.latency.p999_ms >= 400.0,
        "open loop hid the stall: {:?}",
        open.total.latency
    );
    assert!(
        open.total.latency.p90_ms >= 100.0,
        "open loop: {:?}",
        open.total.latency
    );

    // Closed loop: the two users simply wait; one request each sees the stall, however many were
    // sent, so the percentiles hide it; only the maximum gives it away.
    let server = stalling_server();
    let closed = LoadConfig {
        targets: BTreeMap::from([("*".into(), server.url())]),
        users: Some(2),
        ..base
    };
    let closed = engine::run(&closed, &scenario).unwrap();
    assert!(
        closed.total.latency.max_ms >= 400.0,
        "{:?}",
        closed.total.latency
    );
    // At most one per user saw the stall (and a busy machine's own hiccups may add a few), against
    // hundreds in the open loop.
    let closed_slow = slow(&closed);
    assert!(
        closed_slow * 20 <= open_slow,
        "closed loop: {closed_slow} slow requests, open loop: {open_slow}"
    );
}

#[test]
fn errors_are_classified_per_route_and_in_total() {
    let server = support::serve(|r: Req| async move {
        match r.path.as_str() {
            "/missing" => Answer::Reply(404, "{}".into()),
            "/gone" => Answer::Reply(404, "{}".into()),
            "/boom" => Answer::Reply(500, "{}".into()),
            "/slow" => {
                tokio::time::sleep(Duration::from_secs(2)).await;
                Answer::Reply(200, "late".into())
            }
            "/hangup" => Answer::Hangup,
            "/moved" => Answer::Reply(301, String::new()),
            _ => Answer::Reply(200, "ok".into()),
        }
    });
    let scenario = Scenario::parse(
        r#"
name = "errors"
[[request]]
path = "/ok"
[[request]]
path = "/missing"
[[request]]
path = "/gone"
expect = [404]
[[request]]
path = "/boom"
[[request]]
path = "/slow"
[[request]]
path = "/hangup"
[[request]]
path = "/moved"
"#,
        "errors",
    )
    .unwrap();
    // A request count, not a duration: every route is drawn among 280 requests whatever the
    // machine's speed (a route missed has odds of 7 × (6/7)^280, about 10^-18).
    let cfg = LoadConfig {
        users: Some(6),
        timeout: Duration::from_millis(150),
        duration: None,
        requests: Some(280),
        ..config(&server.url())
    };
    let result = engine::run(&cfg, &scenario).unwrap();
    let route = |name: &str| result.routes.iter().find(|r| r.name == name).unwrap();
    for r in &result.routes {
        assert!(r.requests > 0, "{} was never sent", r.name);
    }
    let ok = route("GET /ok");
    assert_eq!((ok.ok, ok.errors.total()), (ok.requests, 0));
    let gone = route("GET /gone");
    assert_eq!(
        (gone.ok, gone.errors.total()),
        (gone.requests, 0),
        "an expected 404 is a success"
    );
    let missing = route("GET /missing");
    assert_eq!(missing.errors.status_4xx, missing.requests);
    let boom = route("GET /boom");
    assert_eq!(boom.errors.status_5xx, boom.requests);
    let slow = route("GET /slow");
    assert_eq!(slow.errors.timeout, slow.requests);
    assert!(
        slow.latency.p50_ms >= 150.0,
        "a timeout records the time waited: {:?}",
        slow.latency
    );
    let hangup = route("GET /hangup");
    assert_eq!(hangup.errors.reset, hangup.requests);
    let moved = route("GET /moved");
    assert_eq!(moved.errors.other, moved.requests);

    let t = &result.total.errors;
    assert_eq!(t.status_4xx, missing.requests);
    assert_eq!(t.status_5xx, boom.requests);
    assert_eq!(t.timeout, slow.requests);
    assert_eq!(t.reset, hangup.requests);
    assert_eq!(t.other, moved.requests);
    assert_eq!(t.connect, 0);
    assert_eq!(result.total.ok + t.total(), result.total.requests);
}

#[test]
fn a_refused_connection_is_a_connect_error_without_latency() {
    let cfg = config(&support::dead_url());
    let result = engine::run(&cfg, &one_route("/")).unwrap();
    let t = &result.total;
    assert!(t.requests > 0);
    assert_eq!(t.errors.connect, t.requests);
    assert_eq!(t.ok, 0);
    assert!(
        t.histogram().unwrap().is_empty(),
        "a refused connection has no latency to report"
    );
}

/// A tiny JSON API: POST /things creates `{"id": "t<n>"}`, GET and DELETE /things/{id} answer 404
/// for ids it does not hold.
fn things_server() -> (
    support::TestServer,
    Arc<Mutex<HashSet<String>>>,
    Arc<AtomicU64>,
) {
    things_server_with(support::ServerOptions::default())
}

/// [`things_server`] speaking as `options` say.
pub(crate) fn things_server_with(
    options: support::ServerOptions,
) -> (
    support::TestServer,
    Arc<Mutex<HashSet<String>>>,
    Arc<AtomicU64>,
) {
    let things = Arc::new(Mutex::new(HashSet::new()));
    let wrong = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(0));
    let (t, w) = (things.clone(), wrong.clone());
    let server = support::serve_with(options, move |r: Req| {
        let (things, wrong, next) = (t.clone(), w.clone(), next.clone());
        async move {
            let id = r.path.strip_prefix("/things/").map(str::to_string);
            match (r.method.as_str(), id) {
                ("POST", None) => {
                    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
                    assert!(body["name"].as_str().unwrap().starts_with("thing "));
                    let id = format!("t{}", next.fetch_add(1, Ordering::Relaxed));
                    things.lock().unwrap().insert(id.clone());
                    Answer::Reply(201, format!(r#"{{"id":"{id}","name":{}}}"#, body["name"]))
                }
                ("GET", Some(id)) if things.lock().unwrap().contains(&id) => {
                    Answer::Reply(200, format!(r#"{{"id":"{id}"}}"#))
                }
                ("DELETE", Some(id)) if things.lock().unwrap().remove(&id) => {
                    Answer::Reply(204, String::new())
                }
                _ => {
                    wrong.fetch_add(1, Ordering::Relaxed);
                    Answer::Reply(404, "{}".into())
                }
            }
        }
    });
    (server, things, wrong)
}

pub(crate) const THINGS: &str = r#"
name = "things"
service = "api"

[[setup]]
method = "POST"
path = "/things"
body = '{"name": "thing {{seq}}"}'
times = 6
expect = [201]
capture = { fixtures = "/id" }

[[request]]
name = "create"
weight = 3
method = "POST"
path = "/things"
body = '{"name": "thing {{seq}} {{random_string 4}}"}'
expect = [201]
capture = { fresh = "/id" }

[[request]]
name = "read"
weight = 3
path = "/things/{{pick fixtures}}"

[[request]]
name = "read fresh"
weight = 2
path = "/things/{{pick fresh}}"

[[request]]
name = "delete"
weight = 2
method = "DELETE"
path = "/things/{{take fresh}}"
expect = [204]
"#;

#[test]
fn setup_fixtures_and_captured_ids_feed_later_requests_without_collisions() {
    let (server, things, wrong) = things_server();
    let cfg = LoadConfig {
        targets: BTreeMap::from([("api".to_string(), server.url())]),
        users: Some(8),
        duration: None,
        requests: Some(400),
        ..config("unused")
    };
    captures_feed_later_requests(&cfg, &things, &wrong);
}

/// Runs [`THINGS`] with `cfg` (400 requests) and checks that setup fixtures and captured ids fed
/// the later requests, none aimed at an id the server does not hold. The run has no warm-up: a
/// warm-up "read fresh" racing a deletion is a 404 the server counts and the result does not.
pub(crate) fn captures_feed_later_requests(
    cfg: &LoadConfig,
    things: &Mutex<HashSet<String>>,
    wrong: &AtomicU64,
) {
    let scenario = Scenario::parse(THINGS, "things").unwrap();
    assert_eq!(scenario.services(), vec!["api".to_string()]);
    let cfg = LoadConfig {
        warmup: Duration::ZERO,
        ..cfg.clone()
    };
    let result = engine::run(&cfg, &scenario).unwrap();
    assert_eq!(result.total.requests, 400);
    let route = |name: &str| {
        result
            .routes
            .iter()
            .find(|r| r.name == name)
            .unwrap()
            .clone()
    };
    assert!(route("create").requests > 10);
    assert!(route("read").requests > 10);
    assert!(route("delete").requests > 0, "captured ids were deleted");
    // No request aimed at an id the server does not hold: reads hit fixtures or live fresh ids and
    // no two deletions took the same id (only "read fresh" can race a deletion; it is the one
    // route allowed a 404).
    let read_fresh = route("read fresh");
    let racing = read_fresh.errors.status_4xx;
    assert_eq!(result.total.errors.total(), racing, "{:?}", result.routes);
    assert_eq!(wrong.load(Ordering::Relaxed), racing);
    // The fixtures were never deleted.
    let left = things.lock().unwrap();
    assert!(left.len() >= 6);
}

#[test]
fn a_setup_step_answered_unexpectedly_stops_the_run_with_a_clear_error() {
    let server = support::serve(|_| async {
        Answer::Reply(422, r#"{"error":{"code":"unprocessable"}}"#.into())
    });
    let scenario = Scenario::parse(THINGS, "things").unwrap();
    let cfg = LoadConfig {
        targets: BTreeMap::from([("api".to_string(), server.url())]),
        ..config("unused")
    };
    let err = format!("{:#}", engine::run(&cfg, &scenario).unwrap_err());
    assert!(err.contains("setup step 1"), "{err}");
    assert!(err.contains("422"), "{err}");
    assert!(err.contains("unprocessable"), "{err}");
}

#[test]
fn a_missing_target_is_named() {
    let scenario = Scenario::parse(THINGS, "things").unwrap();
    let cfg = LoadConfig {
        targets: BTreeMap::from([("other".to_string(), "http://127.0.0.1:1".into())]),
        ..LoadConfig::default()
    };
    let err = format!("{:#}", engine::run(&cfg, &scenario).unwrap_err());
    assert!(err.contains("\"api\""), "{err}");
}

#[test]
fn the_json_result_round_trips_with_its_histograms() {
    let server = support::hello();
    let result = engine::run(&config(&server.url()), &one_route("/")).unwrap();
    let text = serde_json::to_string_pretty(&result).unwrap();
    let back: LoadResult = serde_json::from_str(&text).unwrap();
    assert_eq!(back, result);
    let h = back.total.histogram().unwrap();
    assert_eq!(h.len(), result.total.requests);
    assert_eq!(h.latency(), result.total.latency);
    for key in [
        "settings",
        "machine",
        "started_at",
        "generator_cpu_percent",
        "p999_ms",
        "histogram",
        "status_5xx",
    ] {
        assert!(text.contains(key), "{key} missing from the JSON");
    }
    assert!(result.machine.cores >= 1);
    assert!(result.generator_cpu_percent > 0.0);
}

#[test]
fn every_send_an_open_loop_schedules_is_accounted_for_when_the_server_stops_answering() {
    // The server answers its first 40 requests, then never again (not within the test).
    const ANSWERED: u64 = 40;
    const HANG: Duration = Duration::from_secs(30);
    let seen = Arc::new(AtomicU64::new(0));
    let server = support::serve(move |_| {
        let n = seen.fetch_add(1, Ordering::Relaxed);
        async move {
            if n >= ANSWERED {
                tokio::time::sleep(HANG).await;
            }
            Answer::Reply(200, "ok".into())
        }
    });
    let cfg = LoadConfig {
        targets: BTreeMap::from([("*".into(), server.url())]),
        rate: Some(200.0),
        connections: 4,
        warmup: Duration::ZERO,
        duration: Some(Duration::from_millis(500)),
        timeout: Duration::from_millis(200),
        threads: 2,
        ..LoadConfig::default()
    };
    let began = Instant::now();
    let result = engine::run(&cfg, &one_route("/")).unwrap();
    // 200/s for 0.5 s is 100 sends; those the stuck connections could not make before the drain
    // deadline (window end + one timeout) are counted as timeouts too, none is dropped.
    assert_eq!(result.total.requests, 100);
    let t = &result.total;
    assert_eq!(t.ok + t.errors.timeout, 100, "{t:?}");
    assert!(t.ok <= ANSWERED, "{t:?}");
    assert!(t.errors.timeout >= 100 - ANSWERED, "{t:?}");
    assert!(t.latency.max_ms >= 200.0);
    // The run gave up on the hung requests instead of waiting for their answers.
    assert!(
        began.elapsed() < HANG,
        "the run waited {:?}",
        began.elapsed()
    );
}

/// Splits `bytes` into pieces at every `at` offset.
fn pieces(bytes: &[u8], at: &[usize]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut from = 0;
    for &to in at.iter().chain(std::iter::once(&bytes.len())) {
        out.push(bytes[from..to].to_vec());
        from = to;
    }
    out
}

#[test]
fn answers_in_chunks_until_close_after_an_interim_answer_or_in_http_1_0_are_read_whole() {
    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
        4\r\n{\"id\r\n7;ext=1\r\n\": \"c1\"\r\n1\r\n}\r\n0\r\nx-trailer: 1\r\n\r\n";
    const UNTIL_CLOSE: &[u8] =
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{\"id\": \"u1\"}";
    const INTERIM: &[u8] =
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 13\r\n\r\n{\"id\": \"i1\"}\n";
    const OLD: &[u8] = b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok";
    let server = support::serve_raw(|path| match path {
        "/chunked" => support::RawAnswer {
            // Cut inside the head, a size line, a payload and the trailer.
            pieces: pieces(CHUNKED, &[20, 50, 53, 66, 80]),
            close: false,
        },
        "/until-close" => support::RawAnswer {
            pieces: pieces(UNTIL_CLOSE, &[60]),
            close: true,
        },
        "/interim" => support::RawAnswer {
            pieces: pieces(INTERIM, &[25, 40]),
            close: false,
        },
        _ => support::RawAnswer {
            pieces: vec![OLD.to_vec()],
            close: true,
        },
    });
    // Every answer but the HTTP/1.0 one is captured from: a body decoded wrongly is an error.
    let scenario = Scenario::parse(
        r#"
name = "framing"
[[request]]
path = "/chunked"
capture = { ids = "/id" }
[[request]]
path = "/until-close"
capture = { ids = "/id" }
[[request]]
path = "/interim"
capture = { ids = "/id" }
[[request]]
path = "/old"
"#,
        "framing",
    )
    .unwrap();
    let cfg = LoadConfig {
        users: Some(2),
        duration: None,
        requests: Some(120),
        warmup: Duration::ZERO,
        ..config(&server.url())
    };
    let result = engine::run(&cfg, &scenario).unwrap();
    let t = &result.total;
    assert_eq!((t.requests, t.ok), (120, 120), "{:?}", result.routes);
    let route = |name: &str| result.routes.iter().find(|r| r.name == name).unwrap();
    for (name, wire) in [
        ("GET /chunked", CHUNKED),
        ("GET /until-close", UNTIL_CLOSE),
        ("GET /interim", INTERIM),
        ("GET /old", OLD),
    ] {
        let r = route(name);
        assert!(r.requests > 0, "{name} was never sent");
        assert_eq!(r.bytes_received, wire.len() as u64 * r.requests, "{name}");
    }
    // A body ended by closing, and HTTP/1.0, end their connection; chunked and interim answers
    // leave it open for the next request.
    let closing = route("GET /until-close").requests + route("GET /old").requests;
    let accepted = server.accepted.load(Ordering::Relaxed);
    assert!(
        accepted >= closing && accepted <= closing + 2,
        "{accepted} connections for {closing} closing answers"
    );
}

#[test]
fn a_kept_alive_connection_the_server_closed_while_idle_is_replaced_without_an_error() {
    let closes = Arc::new(AtomicU64::new(0));
    let counted = closes.clone();
    // Every third answer, the server closes the connection after it without saying so.
    let server = support::serve_raw(move |_| support::RawAnswer {
        pieces: vec![b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec()],
        close: counted.fetch_add(1, Ordering::Relaxed) % 3 == 2,
    });
    let cfg = LoadConfig {
        users: Some(1),
        threads: 1,
        duration: None,
        requests: Some(15),
        warmup: Duration::ZERO,
        // Time for the server's close to arrive before the next request (generous: on a busy
        // machine the server's thread may close late, and a request written into a connection
        // the server is closing is reset, by any client).
        think: Duration::from_millis(100),
        ..config(&server.url())
    };
    let result = engine::run(&cfg, &one_route("/")).unwrap();
    assert_eq!(result.total.requests, 15);
    assert_eq!(result.total.errors.total(), 0, "{:?}", result.total.errors);
    // 15 requests, a new connection after every third answer.
    assert_eq!(server.accepted.load(Ordering::Relaxed), 5);
}

#[test]
fn a_server_answering_connection_close_gets_a_new_connection_per_request() {
    let server = support::serve_raw(|_| support::RawAnswer {
        pieces: vec![
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok".to_vec(),
        ],
        close: true,
    });
    let cfg = LoadConfig {
        users: Some(2),
        duration: None,
        requests: Some(40),
        warmup: Duration::ZERO,
        ..config(&server.url())
    };
    let result = engine::run(&cfg, &one_route("/")).unwrap();
    assert_eq!((result.total.requests, result.total.ok), (40, 40));
    assert!(result.settings.keepalive, "the client asked to keep it");
    assert_eq!(server.accepted.load(Ordering::Relaxed), 40);
}

#[test]
fn a_seed_makes_every_user_send_the_same_requests_in_the_same_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    let server = support::serve(move |r: Req| {
        seen.lock().unwrap().push(r.path);
        async { Answer::Reply(200, "ok".into()) }
    });
    let scenario = Scenario::parse(
        r#"
name = "seeded"
[[request]]
path = "/a/{{random_int 1 1000000}}"
weight = 3
[[request]]
path = "/b/{{random_string 8}}"
"#,
        "seeded",
    )
    .unwrap();
    let run = |seed: u64| {
        log.lock().unwrap().clear();
        let cfg = LoadConfig {
            users: Some(1),
            threads: 1,
            duration: None,
            requests: Some(50),
            warmup: Duration::ZERO,
            seed: Some(seed),
            ..config(&server.url())
        };
        let result = engine::run(&cfg, &scenario).unwrap();
        assert_eq!(result.settings.seed, Some(seed));
        log.lock().unwrap().clone()
    };
    let first = run(7);
    assert_eq!(first.len(), 50);
    assert_eq!(run(7), first, "one seed, one stream");
    assert_ne!(run(8), first, "another seed, another stream");
    // Without a seed one is chosen and recorded, so the run can be replayed.
    let cfg = LoadConfig {
        requests: Some(5),
        duration: None,
        ..config(&server.url())
    };
    assert!(engine::run(&cfg, &scenario)
        .unwrap()
        .settings
        .seed
        .is_some());
}

#[test]
fn open_loop_shards_send_the_whole_schedule_between_them_and_no_send_twice() {
    use brigade_load::shard::ShardPlan;
    use brigade_records::shard::Shard;
    // 600 sends/s for 1 s over 7 connections, as 3 shards: each sends its connections' part of
    // the one schedule, so together they send exactly the run's 600, as one generator would.
    let server = support::hello();
    let cfg = LoadConfig {
        targets: BTreeMap::from([("*".into(), server.url())]),
        rate: Some(600.0),
        connections: 7,
        warmup: Duration::ZERO,
        duration: Some(Duration::from_secs(1)),
        threads: 1,
        ..LoadConfig::default()
    };
    let scenario = one_route("/bench/hello");
    let shards: Vec<LoadResult> = (0..3)
        .map(|index| {
            let plan = ShardPlan {
                shard: Shard { index, count: 3 },
                ..ShardPlan::default()
            };
            let (cfg, scenario) = (cfg.clone(), scenario.clone());
            std::thread::spawn(move || engine::run_shard(&cfg, &scenario, &plan).unwrap())
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let connections: Vec<u32> = shards.iter().map(|r| r.settings.connections).collect();
    assert_eq!(connections, [3, 2, 2], "connections 0,3,6 / 1,4 / 2,5");
    let sent: u64 = shards.iter().map(|r| r.total.requests).sum();
    assert_eq!(
        sent,
        600,
        "the shards' requests: {:?}",
        shards.iter().map(|r| r.total.requests).collect::<Vec<_>>()
    );
    let rates: f64 = shards.iter().map(|r| r.settings.rate.unwrap()).sum();
    assert!((rates - 600.0).abs() < 1e-9);
    // Each shard's share of the schedule is its connections' share: 3/7, 2/7, 2/7 of 600, within
    // the one send a connection may have due right at the window's end.
    for r in &shards {
        let expected = 600.0 * f64::from(r.settings.connections) / 7.0;
        assert!(
            (r.total.requests as f64 - expected).abs() <= 1.0,
            "{} vs {expected}",
            r.total.requests
        );
    }
    // More shards than connections: the extra one has nothing to run and says so.
    let plan = ShardPlan {
        shard: Shard { index: 7, count: 8 },
        ..ShardPlan::default()
    };
    let err = engine::run_shard(&cfg, &scenario, &plan).unwrap_err();
    assert!(err.to_string().contains("nothing to run"), "{err}");
    // A start time already past refuses to run instead of measuring another window.
    let plan = ShardPlan {
        start_at: Some(std::time::SystemTime::now() - Duration::from_secs(10)),
        ..ShardPlan::default()
    };
    let err = engine::run_shard(&cfg, &scenario, &plan).unwrap_err();
    assert!(err.to_string().contains("--start-at was"), "{err}");
    // Less late than the plan allows (a window set in one process): it starts at once.
    let plan = ShardPlan {
        start_at: Some(std::time::SystemTime::now() - Duration::from_millis(100)),
        late_ok: Duration::from_secs(10),
        ..ShardPlan::default()
    };
    let late = engine::run_shard(&cfg, &scenario, &plan).unwrap();
    assert_eq!(late.total.requests, 600, "{:?}", late.total);
}
