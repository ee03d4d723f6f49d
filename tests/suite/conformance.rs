//! The restaurant's conformance suite (`brigade_restaurant::conformance`: the kit's checks every
//! service passes, then its own) against every runtime × every store, over real sockets, each
//! combination on its own fresh in-process deployment (`brigade_launch::conformance_matrix!`).
//!
//! MongoDB runs when `MONGODB_URI` is set or a Docker engine is reachable (a `mongo:7` container);
//! otherwise its tests say loudly why they skip, and fail under `BRIGADE_REQUIRE_MONGO=1`.
//!
//! Each runtime's suite also runs over h2c, h1-tls and h2-tls on the memory store (the matrix's
//! `passes_over_*` tests). Also here: the server limits on every runtime over raw sockets
//! ([`limits`]), and over HTTP/2 and TLS ([`protocols`]).

use brigade_launch::testing::Deployment;
use brigade_launch::Services;
use brigade_restaurant::conformance;

fn restaurant() -> Services {
    Services::from(brigade_restaurant::services())
}

async fn suite(d: Deployment) {
    conformance::run_suite(&d).await;
}

brigade_launch::conformance_matrix!(restaurant(), suite);

mod corpus;
mod differential;
mod protocols;

/// The server limits, the same on every runtime (`brigade_kit::limits`), checked over raw sockets
/// with the engine's abusive clients while a normal load runs: slow heads, idle keep-alive
/// connections and unfinished bodies are closed by their timeouts, heads over the count or size are
/// a JSON 431, an announced oversized body a 413 before it is read (a 408 would mean it waited for
/// the body), a chunked one the same 413 once it grows past the limit, `HEAD` has no body, and past
/// the connection limit a new connection is closed at once while the admitted ones stay. The normal
/// load, whose connections are open first, has zero errors. Counts, not timings: every close is
/// asserted to happen within a watch several times the limit's timeout.
mod limits {
    use std::net::SocketAddr;
    use std::time::Duration;

    use brigade_kit::limits::ServerLimits;
    use brigade_launch::testing::{Deployment, StoreKind, Target};
    use brigade_launch::Services;
    use brigade_load::abuse::{self, Abuse, AbuseConfig, AbuseOutcome};
    use brigade_load::engine::{self, LoadConfig};
    use brigade_records::result::LoadResult;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// One service that carries the bench routes.
    fn one_service() -> Services {
        let first = brigade_restaurant::services().into_iter().next().unwrap();
        Services::from(vec![first])
    }

    fn start(runtime: &str, limits: ServerLimits) -> (Deployment, String, SocketAddr) {
        let services = one_service();
        let d = Deployment::start_with_limits(&services, runtime, StoreKind::Memory, None, limits)
            .unwrap_or_else(|e| panic!("starting on {runtime}: {e:#}"));
        let name = d.services().remove(0);
        let url = d.url(&name);
        let addr = url.trim_start_matches("http://").parse().unwrap();
        (d, url, addr)
    }

    /// The engine's `hello` scenario on `users` keep-alive connections for `duration`, on a thread.
    fn normal_load(
        url: &str,
        users: u32,
        duration: Duration,
    ) -> std::thread::JoinHandle<LoadResult> {
        let scenario = brigade_load::Registry::new().load("hello").unwrap();
        let config = LoadConfig {
            targets: [("*".to_owned(), url.to_owned())].into(),
            users: Some(users),
            duration: Some(duration),
            warmup: Duration::ZERO,
            threads: 1,
            timeout: Duration::from_secs(10),
            ..LoadConfig::default()
        };
        std::thread::spawn(move || engine::run(&config, &scenario).expect("the normal load runs"))
    }

    fn assert_clean(load: LoadResult, what: &str) {
        assert!(load.total.requests > 0, "{what}: the normal load ran");
        assert_eq!(
            load.total.errors.total(),
            0,
            "{what}: the normal load had errors: {:?}",
            load.total.errors
        );
    }

    fn batch(abuse: Abuse, n: usize, addr: SocketAddr, watch: Duration) -> AbuseConfig {
        let mut c = AbuseConfig::new(abuse, n, addr);
        c.watch = watch;
        c.trickle = Duration::from_millis(200);
        c.path = "/bench/bytes".to_owned();
        if abuse != Abuse::UnfinishedBody {
            c.path = "/health".to_owned();
        }
        c
    }

    #[track_caller]
    fn all_closed(o: &AbuseOutcome, n: u64, what: &str) {
        assert_eq!(o.refused, 0, "{what}: refused at connect: {o:?}");
        assert_eq!(
            (o.closed, o.still_open),
            (n, 0),
            "{what}: every connection closed by the server within the watch: {o:?}"
        );
    }

    /// Sends `request` on a fresh connection and reads until the server closes it (or 10 s).
    async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        String::from_utf8_lossy(&exchange_bytes(addr, request).await).into_owned()
    }

    /// [`exchange`], the answer's bytes as they came.
    async fn exchange_bytes(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _ = s.write_all(request).await; // the server may answer and close before all of it
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
        out
    }

    /// The largest answer the bench routes give (16 MiB, more than a loopback socket's buffers
    /// take at once) arrives whole, byte for byte, on a connection that closes after it.
    /// ntex-net's io_uring driver, as published, drops what the kernel did not take of a page and
    /// shuts a closing connection down mid-send; `ntex-uring` runs on a patched copy
    /// (vendor/README.md).
    async fn largest_answer_arrives_whole(runtime: &str, addr: SocketAddr) {
        let n = brigade_kit::http::BENCH_BODY_LIMIT;
        let request =
            format!("GET /bench/bytes/{n} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
        let a = exchange_bytes(addr, request.as_bytes()).await;
        let at = a
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| {
                panic!(
                    "{runtime}: no head in {:?}",
                    String::from_utf8_lossy(&a[..a.len().min(300)])
                )
            });
        let head = String::from_utf8_lossy(&a[..at]).to_ascii_lowercase();
        assert_eq!(status(&head), "200", "{runtime}: {head}");
        assert!(
            head.contains(&format!("content-length: {n}")),
            "{runtime}: {head}"
        );
        let body = &a[at + 4..];
        assert_eq!(body.len(), n, "{runtime}: the body's length");
        assert!(
            body == brigade_kit::standard::pseudo_random_bytes(n),
            "{runtime}: the body's bytes"
        );
    }

    /// Waits until the normal load is being answered (`hello` answered `n` times, read from the
    /// server's `/metrics`): its connections are open before the abuse begins.
    async fn until_loaded(addr: SocketAddr, n: u64) {
        let started = std::time::Instant::now();
        loop {
            let m = exchange(
                addr,
                b"GET /metrics HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
            )
            .await;
            let answered: u64 = m
                .lines()
                .filter(|l| {
                    l.starts_with("brigade_http_requests_total{") && l.contains("/bench/hello")
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
                .sum();
            if answered >= n {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the normal load never ran"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn status(answer: &str) -> &str {
        answer.get(9..12).unwrap_or("")
    }

    /// Everything after the head of the first answer.
    fn body(answer: &str) -> &str {
        answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)
    }

    fn check(runtime: &str) {
        assert!(abuse::raise_open_file_limit(4096) >= 512);
        let client = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let timeout = Duration::from_secs(1);
        let limits = ServerLimits {
            header_read_timeout: timeout,
            keep_alive_timeout: timeout,
            body_read_timeout: timeout,
            max_headers: 8,
            max_header_bytes: 2048,
            max_body_bytes: 1 << 20,
            max_connections: 200,
            ..ServerLimits::default()
        };
        let (d, url, addr) = start(runtime, limits);
        let load = normal_load(&url, 4, Duration::from_secs(5));
        let watch = Duration::from_secs(8);
        client.block_on(async {
            until_loaded(addr, 100).await; // the normal load connects first
            let batches = [Abuse::Slowloris, Abuse::Idle, Abuse::UnfinishedBody]
                .map(|abuse| batch(abuse, 20, addr, watch));
            let (slow, idle, unfinished) = tokio::join!(
                abuse::run(&batches[0]),
                abuse::run(&batches[1]),
                abuse::run(&batches[2]),
            );
            all_closed(&slow, 20, &format!("{runtime} slowloris"));
            all_closed(&idle, 20, &format!("{runtime} idle"));
            assert_eq!(idle.answered.get(&200), Some(&20), "{runtime} idle: {idle:?}");
            all_closed(&unfinished, 20, &format!("{runtime} unfinished body"));
            assert_eq!(
                unfinished.answered.get(&408),
                Some(&20),
                "{runtime} unfinished body: answered 408 then closed: {unfinished:?}"
            );

            let many: String = (0..9).map(|i| format!("X-H{i}: v\r\n")).collect();
            let a = exchange(addr, format!("GET /health HTTP/1.1\r\nHost: h\r\n{many}Connection: close\r\n\r\n").as_bytes()).await;
            assert_eq!(status(&a), "431", "{runtime}: 11 headers over 8: {a}");
            assert!(body(&a).contains("header_fields_too_large"), "{runtime}: JSON 431: {a}");
            let big = "v".repeat(3000);
            let a = exchange(addr, format!("GET /health HTTP/1.1\r\nHost: h\r\nX-Big: {big}\r\nConnection: close\r\n\r\n").as_bytes()).await;
            assert_eq!(status(&a), "431", "{runtime}: a 3 KB head over 2 KB: {a}");
            assert!(body(&a).contains("header_fields_too_large"), "{runtime}: JSON 431: {a}");

            let a = exchange(addr, b"HEAD /bench/hello HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").await;
            assert_eq!(status(&a), "200", "{runtime}: HEAD on a GET route: {a}");
            assert_eq!(body(&a), "", "{runtime}: HEAD has no body: {a:?}");
            largest_answer_arrives_whole(runtime, addr).await;

            let over = (1 << 20) + 1;
            let a = exchange(addr, format!("POST /bench/bytes HTTP/1.1\r\nHost: h\r\nContent-Type: application/octet-stream\r\nContent-Length: {over}\r\nConnection: close\r\n\r\n").as_bytes()).await;
            assert_eq!(status(&a), "413", "{runtime}: refused from Content-Length, before the body: {a}");
            assert!(body(&a).contains("body larger than 1048576 bytes"), "{runtime}: {a}");
            let chunk = "x".repeat(600 * 1024);
            let chunked = format!("POST /bench/bytes HTTP/1.1\r\nHost: h\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{chunk}\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n", chunk.len(), chunk.len());
            let a = exchange(addr, chunked.as_bytes()).await;
            assert_eq!(status(&a), "413", "{runtime}: a chunked body past the limit: {a:.200}");
            assert!(body(&a).contains("body larger than 1048576 bytes"), "{runtime}: {a:.300}");
        });
        assert_clean(load.join().unwrap(), &format!("{runtime} under abuse"));
        d.shutdown();

        // The connection limit: 4 normal + 20 admitted = 24, then 10 more are closed at once
        // (the head timer is 30 s, far past the watch: only the limit can close them).
        let limits = ServerLimits {
            max_connections: 24,
            header_read_timeout: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(30),
            ..ServerLimits::default()
        };
        let (d, url, addr) = start(runtime, limits);
        let load = normal_load(&url, 4, Duration::from_secs(5));
        client.block_on(async {
            // The server shows no count of its open connections, so the two waits here are pauses
            // (the normal load's 4 connections in first, then the 20 admitted ones).
            tokio::time::sleep(Duration::from_millis(500)).await;
            let first = batch(Abuse::Flood, 20, addr, Duration::from_secs(4));
            let admitted = tokio::spawn(async move { abuse::run(&first).await });
            tokio::time::sleep(Duration::from_secs(1)).await;
            let over = abuse::run(&batch(Abuse::Flood, 10, addr, Duration::from_secs(2))).await;
            all_closed(&over, 10, &format!("{runtime} past the connection limit"));
            let admitted = admitted.await.unwrap();
            assert_eq!(
                (admitted.still_open, admitted.closed, admitted.refused),
                (20, 0, 0),
                "{runtime}: the admitted connections stay: {admitted:?}"
            );
        });
        assert_clean(
            load.join().unwrap(),
            &format!("{runtime} at the connection limit"),
        );
        d.shutdown();
    }

    macro_rules! one_runtime {
        ($runtime:ident, $name:literal,) => {
            #[test]
            fn $runtime() {
                check($name);
            }
        };
    }

    brigade_runtimes::for_each_runtime!(one_runtime!());
}

/// The metric names and labels are the same on every runtime: the restaurant on each runtime
/// (memory store) answers the same requests — a create, a read, a 404, a seat that asks waiter, an
/// order that asks tables, a 405 and a path no route takes — and each service's `/metrics` then
/// lists the same series (names and labels; values and process figures aside).
#[test]
fn metric_names_and_labels_are_the_same_on_every_runtime() {
    use brigade_kit::conformance::observe::metric_series;
    use brigade_kit::conformance::{Deployment as _, TestClient};
    use brigade_launch::testing::StoreKind;
    use serde_json::json;

    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut seen: Vec<(String, std::collections::BTreeMap<String, Vec<String>>)> = Vec::new();
    for runtime in brigade_runtimes::names() {
        let d = Deployment::start(&restaurant(), runtime, StoreKind::Memory, None).unwrap();
        let series = rt.block_on(async {
            let c = TestClient::default();
            let (w, t, k) = (d.url("waiter"), d.url("tables"), d.url("kitchen"));
            let waiter = c
                .post(
                    &format!("{w}/waiters"),
                    json!({"name": "Ana", "shift": "night"}),
                )
                .await
                .expect(201, "waiter");
            let waiter_id = waiter.json["id"].as_str().unwrap().to_string();
            c.get(&format!("{w}/waiters/{waiter_id}"))
                .await
                .expect(200, "get");
            c.get(&format!("{w}/waiters/nobody"))
                .await
                .expect(404, "404");
            let table = c
                .post(&format!("{t}/tables"), json!({"number": 1, "seats": 4}))
                .await
                .expect(201, "table");
            let table_id = table.json["id"].as_str().unwrap().to_string();
            c.post(
                &format!("{t}/tables/{table_id}/seat"),
                json!({"party_size": 2, "waiter_id": waiter_id}),
            )
            .await
            .expect(200, "seat");
            c.post(
                &format!("{k}/orders"),
                json!({"table_id": table_id, "items": [{"dish": "soup", "qty": 1}]}),
            )
            .await
            .expect(201, "order");
            c.delete(&format!("{k}/orders")).await.expect(405, "405");
            c.get(&format!("{k}/no/such/path"))
                .await
                .expect(404, "unmatched");
            let mut by_service = std::collections::BTreeMap::new();
            for (name, base) in [("waiter", w), ("tables", t), ("kitchen", k)] {
                let m = c
                    .get(&format!("{base}/metrics"))
                    .await
                    .expect(200, "metrics");
                let text = String::from_utf8_lossy(&m.body).to_string();
                by_service.insert(
                    name.to_string(),
                    metric_series(&text).into_iter().collect::<Vec<_>>(),
                );
            }
            by_service
        });
        d.shutdown();
        seen.push((runtime.to_string(), series));
    }
    let (first, expected) = &seen[0];
    for service in ["waiter", "tables", "kitchen"] {
        let s = &expected[service];
        assert!(
            s.iter()
                .any(|l| l.starts_with("brigade_store_operation_duration_seconds_count")),
            "{service}: no store series"
        );
        if service != "waiter" {
            assert!(
                s.iter()
                    .any(|l| l.starts_with("brigade_peer_requests_total")),
                "{service}: no peer series"
            );
        }
    }
    for (runtime, series) in &seen[1..] {
        for (service, s) in series {
            let e = &expected[service];
            let missing: Vec<_> = e.iter().filter(|l| !s.contains(l)).collect();
            let extra: Vec<_> = s.iter().filter(|l| !e.contains(l)).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "{service} on {runtime} differs from {first}: missing {missing:#?}, extra {extra:#?}"
            );
        }
    }
}
