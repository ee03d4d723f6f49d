//! The server limits over HTTP/2 and TLS on every runtime (memory store), the way [`super::limits`]
//! checks them over HTTP/1.1: while a normal load over the same protocol runs (and must end with
//! zero errors), a stalled TLS handshake is closed by the head timer (slowloris on handshakes);
//! over h2c and h2-tls, raw `h2` streams get the kit's JSON 431 for a head over the count, a JSON
//! 413 for an announced oversized body, `HEAD` without a body, a 408 (or the stream reset) for a
//! body that stops half way (slowloris on a stream), and a client that opens every stream it may
//! and never reads its answers holds only its own connection: a fresh one is still answered. Over
//! h3, on the runtimes that offer it, the same stream checks on raw `h3` streams over QUIC, with a
//! normal load over h3 beside them; and the generator's exact counts over h3 (its own tests' server
//! speaks TCP only), and an idle h3 connection closed by the stop rather than held to the drain's
//! end. Counts and outcomes, not timings: every wait is a watch several times the limit it checks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use brigade_kit::conformance::Wire;
use brigade_kit::limits::ServerLimits;
use brigade_launch::testing::{Deployment, StoreKind, Target};
use brigade_load::abuse::{self, Abuse, AbuseConfig};
use brigade_load::engine::{self, LoadConfig};
use brigade_records::protocol::{Protocol, TlsClient};
use bytes::Bytes;
use http::{Method, Request, StatusCode};

/// The limits the checks run under: short timers, few headers, a 1 MiB body.
fn limits() -> ServerLimits {
    let second = Duration::from_secs(1);
    ServerLimits {
        header_read_timeout: second,
        keep_alive_timeout: second,
        body_read_timeout: second,
        max_headers: 8,
        max_header_bytes: 2048,
        max_body_bytes: 1 << 20,
        max_connections: 200,
        ..ServerLimits::default()
    }
}

fn start(runtime: &str, wire: Wire) -> (Deployment, String, SocketAddr) {
    let first = brigade_restaurant::services().into_iter().next().unwrap();
    let services = brigade_launch::Services::from(vec![first]);
    let d = Deployment::start_over(&services, runtime, StoreKind::Memory, None, limits(), wire)
        .unwrap_or_else(|e| panic!("starting {runtime} over {}: {e:#}", wire.as_str()));
    let url = d.url(&d.services()[0]);
    let addr = url
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .parse()
        .unwrap();
    (d, url, addr)
}

/// The generator's protocol of the same name.
fn protocol(wire: Wire) -> Protocol {
    wire.as_str().parse().unwrap()
}

/// The engine's `hello` scenario over `wire` for a few seconds, on a thread.
fn normal_load(
    url: &str,
    wire: Wire,
) -> std::thread::JoinHandle<brigade_records::result::LoadResult> {
    let scenario = brigade_load::Registry::new().load("hello").unwrap();
    let config = LoadConfig {
        targets: [("*".to_owned(), url.to_owned())].into(),
        users: Some(4),
        duration: Some(Duration::from_secs(4)),
        warmup: Duration::ZERO,
        threads: 1,
        timeout: Duration::from_secs(10),
        protocol: protocol(wire),
        tls: TlsClient {
            insecure: true,
            ..TlsClient::default()
        },
        ..LoadConfig::default()
    };
    std::thread::spawn(move || engine::run(&config, &scenario).expect("the normal load runs"))
}

/// A client configuration that accepts the deployment's self-signed certificate, offering `h2`.
fn h2_tls_config(d: &Deployment) -> Arc<rustls::ClientConfig> {
    let mut config = (*d.tls_client().expect("a TLS deployment")).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(config)
}

/// An HTTP/2 connection to the deployment, over TLS or not as `wire` says.
async fn h2_connect(
    d: &Deployment,
    addr: SocketAddr,
    wire: Wire,
) -> h2::client::SendRequest<Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    if wire.tls() {
        let connector = tokio_rustls::TlsConnector::from(h2_tls_config(d));
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = connector.connect(name, tcp).await.unwrap();
        let (send, conn) = h2::client::handshake(tls).await.unwrap();
        tokio::spawn(conn);
        send
    } else {
        let (send, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        send
    }
}

/// An answer over HTTP/2: its status and its whole body (or the stream's error).
async fn h2_answer(
    send: &mut h2::client::SendRequest<Bytes>,
    req: Request<()>,
    body: Option<Bytes>,
) -> Result<(StatusCode, Bytes), h2::Error> {
    let mut ready = send.clone().ready().await?;
    let (answer, mut stream) = ready.send_request(req, body.is_none())?;
    if let Some(b) = body {
        stream.send_data(b, true)?;
    }
    let resp = answer.await?;
    let status = resp.status();
    let mut body = resp.into_body();
    let mut all = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        all.extend_from_slice(&chunk);
    }
    Ok((status, Bytes::from(all)))
}

fn request(method: Method, url: &str, path: &str) -> http::request::Builder {
    Request::builder()
        .method(method)
        .uri(format!("{url}{path}"))
}

/// The HTTP/2 checks on one connection (see the module documentation).
async fn h2_checks(d: &Deployment, url: &str, addr: SocketAddr, wire: Wire, what: &str) {
    let mut send = h2_connect(d, addr, wire).await;
    let watch = Duration::from_secs(10);

    let mut many = request(Method::GET, url, "/health");
    for i in 0..9 {
        many = many.header(format!("x-h{i}"), "v");
    }
    let (status, body) = h2_answer(&mut send, many.body(()).unwrap(), None)
        .await
        .unwrap();
    assert_eq!(status, 431, "{what}: 9 headers over 8");
    assert!(
        String::from_utf8_lossy(&body).contains("header_fields_too_large"),
        "{what}: a JSON 431: {body:?}"
    );

    // A body with no content-length: HTTP/2 frames it (RFC 9112's "no length, no body" is
    // HTTP/1.1's), so the route reads it whole.
    let unsized_post = request(Method::POST, url, "/bench/bytes")
        .header("content-type", "application/octet-stream")
        .body(())
        .unwrap();
    let (status, body) = h2_answer(&mut send, unsized_post, Some(Bytes::from_static(b"hello")))
        .await
        .unwrap();
    assert_eq!(status, 200, "{what}: {body:?}");
    assert!(
        String::from_utf8_lossy(&body).contains(r#""length":5"#),
        "{what}: a body with no content-length is read: {body:?}"
    );

    let head = request(Method::HEAD, url, "/bench/hello").body(()).unwrap();
    let (status, body) = h2_answer(&mut send, head, None).await.unwrap();
    assert_eq!(
        (status.as_u16(), body.len()),
        (200, 0),
        "{what}: HEAD has no body"
    );

    let over = request(Method::POST, url, "/bench/bytes")
        .header("content-type", "application/octet-stream")
        .header("content-length", (1 << 20) + 1)
        .body(())
        .unwrap();
    let mut ready = send.clone().ready().await.unwrap();
    let (answer, _stream) = ready.send_request(over, false).unwrap();
    let resp = tokio::time::timeout(watch, answer)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer to an oversized body"))
        .unwrap();
    assert_eq!(
        resp.status(),
        413,
        "{what}: refused from content-length, before the body"
    );

    // Slowloris on a stream: a tenth of an announced body, then nothing. The stream ends, with
    // the kit's 408 or a reset, within the watch; the connection still answers others.
    let stalled = request(Method::POST, url, "/bench/bytes")
        .header("content-type", "application/octet-stream")
        .header("content-length", 1000)
        .body(())
        .unwrap();
    let mut ready = send.clone().ready().await.unwrap();
    let (answer, mut stream) = ready.send_request(stalled, false).unwrap();
    stream
        .send_data(Bytes::from(vec![b'x'; 100]), false)
        .unwrap();
    let ended = tokio::time::timeout(watch, answer)
        .await
        .unwrap_or_else(|_| panic!("{what}: a stalled body held its stream past the watch"));
    if let Ok(resp) = ended {
        assert_eq!(resp.status(), 408, "{what}: a stalled body is a 408");
    }
    let health = request(Method::GET, url, "/health").body(()).unwrap();
    let (status, _) = h2_answer(&mut send, health, None).await.unwrap();
    assert_eq!(
        status, 200,
        "{what}: the connection answers after a stalled stream"
    );

    // A client that opens streams and never reads them: each asks for 512 KiB and releases no
    // window, so the server's sends stall; another connection is answered all the same.
    let greedy = h2_connect(d, addr, wire).await;
    let mut unread = Vec::new();
    for _ in 0..32 {
        let Ok(mut ready) = greedy.clone().ready().await else {
            break;
        };
        let req = request(Method::GET, url, "/bench/bytes/524288")
            .body(())
            .unwrap();
        match ready.send_request(req, true) {
            Ok((answer, _)) => unread.push(answer),
            Err(_) => break,
        }
    }
    assert!(
        !unread.is_empty(),
        "{what}: the greedy client opened streams"
    );
    let mut fresh = h2_connect(d, addr, wire).await;
    let health = request(Method::GET, url, "/health").body(()).unwrap();
    let (status, _) = tokio::time::timeout(watch, h2_answer(&mut fresh, health, None))
        .await
        .unwrap_or_else(|_| panic!("{what}: a fresh connection waited on a greedy one"))
        .unwrap();
    assert_eq!(
        status, 200,
        "{what}: a fresh connection is answered beside unread streams"
    );
    drop(unread);
}

fn check(runtime: &str, wire: Wire) {
    assert!(abuse::raise_open_file_limit(4096) >= 512);
    let what = format!("{runtime} over {}", wire.as_str());
    let (d, url, addr) = start(runtime, wire);
    let load = normal_load(&url, wire);
    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    client.block_on(async {
        if wire.tls() {
            // Slowloris on the handshake: connect and send nothing; the head timer closes them.
            let mut c = AbuseConfig::new(Abuse::Flood, 20, addr);
            c.watch = Duration::from_secs(8);
            let o = abuse::run(&c).await;
            assert_eq!(o.refused, 0, "{what}: refused at connect: {o:?}");
            assert_eq!(
                (o.closed, o.still_open),
                (20, 0),
                "{what}: stalled handshakes closed within the watch: {o:?}"
            );
        }
        if wire.http2() {
            h2_checks(&d, &url, addr, wire, &what).await;
        }
    });
    let load = load.join().unwrap();
    assert!(load.total.requests > 0, "{what}: the normal load ran");
    assert_eq!(
        load.total.errors.total(),
        0,
        "{what}: the normal load had errors: {:?}",
        load.total.errors
    );
    d.shutdown();
}

/// A QUIC endpoint that trusts the deployment's certificate, offering `h3`.
fn h3_endpoint(d: &Deployment) -> quinn::Endpoint {
    let mut config = (*d.tls_client().expect("a TLS deployment")).clone();
    config.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(config).unwrap();
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint
}

type H3Send = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// An HTTP/3 connection to the deployment.
async fn h3_connect(endpoint: &quinn::Endpoint, addr: SocketAddr) -> H3Send {
    let quic = endpoint.connect(addr, "localhost").unwrap().await.unwrap();
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic))
        .await
        .unwrap();
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    send
}

/// An answer over HTTP/3: its status and its whole body (a send the server stopped reading
/// after it answered is no error).
async fn h3_answer(
    send: &mut H3Send,
    req: Request<()>,
    body: Option<Bytes>,
) -> Result<(StatusCode, Bytes), h3::error::StreamError> {
    use bytes::Buf;
    let mut stream = send.send_request(req).await?;
    if let Some(b) = body {
        let _ = stream.send_data(b).await;
    }
    let _ = stream.finish().await;
    let resp = stream.recv_response().await?;
    let mut all = Vec::new();
    while let Some(mut chunk) = stream.recv_data().await? {
        all.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
    }
    Ok((resp.status(), Bytes::from(all)))
}

/// The HTTP/2 checks' HTTP/3 twins (see the module documentation), on QUIC streams.
async fn h3_checks(d: &Deployment, url: &str, addr: SocketAddr, what: &str) {
    let endpoint = h3_endpoint(d);
    let mut send = h3_connect(&endpoint, addr).await;
    let watch = Duration::from_secs(10);

    let mut many = request(Method::GET, url, "/health");
    for i in 0..9 {
        many = many.header(format!("x-h{i}"), "v");
    }
    let (status, body) = h3_answer(&mut send, many.body(()).unwrap(), None)
        .await
        .unwrap();
    assert_eq!(status, 431, "{what}: 9 headers over 8");
    assert!(
        String::from_utf8_lossy(&body).contains("header_fields_too_large"),
        "{what}: a JSON 431: {body:?}"
    );

    let unsized_post = request(Method::POST, url, "/bench/bytes")
        .header("content-type", "application/octet-stream")
        .body(())
        .unwrap();
    let (status, body) = h3_answer(&mut send, unsized_post, Some(Bytes::from_static(b"hello")))
        .await
        .unwrap();
    assert_eq!(status, 200, "{what}: {body:?}");
    assert!(
        String::from_utf8_lossy(&body).contains(r#""length":5"#),
        "{what}: a body with no content-length is read (HTTP/3 frames it): {body:?}"
    );

    let head = request(Method::HEAD, url, "/bench/hello").body(()).unwrap();
    let (status, body) = h3_answer(&mut send, head, None).await.unwrap();
    assert_eq!(
        (status.as_u16(), body.len()),
        (200, 0),
        "{what}: HEAD has no body"
    );

    // An announced oversized body: the 413 comes before any of it is sent.
    let over = request(Method::POST, url, "/bench/bytes")
        .header("content-type", "application/octet-stream")
        .header("content-length", (1 << 20) + 1)
        .body(())
        .unwrap();
    let mut stream = send.send_request(over).await.unwrap();
    let resp = tokio::time::timeout(watch, stream.recv_response())
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer to an oversized body"))
        .unwrap();
    assert_eq!(
        resp.status(),
        413,
        "{what}: refused from content-length, before the body"
    );
    drop(stream);

    // Slowloris on a stream: a tenth of an announced body, then nothing. The stream ends, with
    // the kit's 408 or a reset, within the watch; the connection still answers others.
    let stalled = request(Method::POST, url, "/bench/bytes")
        .header("content-type", "application/octet-stream")
        .header("content-length", 1000)
        .body(())
        .unwrap();
    let mut stream = send.send_request(stalled).await.unwrap();
    stream
        .send_data(Bytes::from(vec![b'x'; 100]))
        .await
        .unwrap();
    let ended = tokio::time::timeout(watch, stream.recv_response())
        .await
        .unwrap_or_else(|_| panic!("{what}: a stalled body held its stream past the watch"));
    if let Ok(resp) = ended {
        assert_eq!(resp.status(), 408, "{what}: a stalled body is a 408");
    }
    drop(stream);
    let health = request(Method::GET, url, "/health").body(()).unwrap();
    let (status, _) = h3_answer(&mut send, health, None).await.unwrap();
    assert_eq!(
        status, 200,
        "{what}: the connection answers after a stalled stream"
    );

    // A client that opens streams and never reads them: another connection is answered.
    let mut greedy = h3_connect(&endpoint, addr).await;
    let mut unread = Vec::new();
    for _ in 0..32 {
        let req = request(Method::GET, url, "/bench/bytes/524288")
            .body(())
            .unwrap();
        match tokio::time::timeout(Duration::from_secs(1), greedy.send_request(req)).await {
            Ok(Ok(mut stream)) => {
                let _ = stream.finish().await;
                unread.push(stream);
            }
            _ => break,
        }
    }
    assert!(
        !unread.is_empty(),
        "{what}: the greedy client opened streams"
    );
    let mut fresh = h3_connect(&endpoint, addr).await;
    let health = request(Method::GET, url, "/health").body(()).unwrap();
    let (status, _) = tokio::time::timeout(watch, h3_answer(&mut fresh, health, None))
        .await
        .unwrap_or_else(|_| panic!("{what}: a fresh connection waited on a greedy one"))
        .unwrap();
    assert_eq!(
        status, 200,
        "{what}: a fresh connection is answered beside unread streams"
    );
    drop(unread);
    endpoint.close(0u32.into(), b"");
}

/// The limits over HTTP/3 where `runtime` offers it (the others' refusal is the conformance
/// matrix's `passes_over_h3_or_refuses_it`), with a normal load over h3 beside them.
fn check_h3(runtime: &str) {
    let offers = brigade_runtimes::find(runtime)
        .is_some_and(|r| r.offers(brigade_kit::limits::ServeProtocol::H3));
    if !offers {
        return;
    }
    let what = format!("{runtime} over h3");
    let (d, url, addr) = start(runtime, Wire::H3);
    let load = normal_load(&url, Wire::H3);
    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    client.block_on(h3_checks(&d, &url, addr, &what));
    let load = load.join().unwrap();
    assert!(load.total.requests > 0, "{what}: the normal load ran");
    assert_eq!(
        load.total.errors.total(),
        0,
        "{what}: the normal load had errors: {:?}",
        load.total.errors
    );
    assert_eq!(
        load.tls.as_ref().and_then(|t| t.alpn.as_deref()),
        Some("h3"),
        "{what}: the generator's handshakes chose h3"
    );
    d.shutdown();
}

/// The generator over h3 (its own tests' server speaks TCP only): closed and open loop, exact
/// counts, one QUIC handshake per kept connection, as every other protocol; without keep-alive a
/// handshake per request, sessions resumed after the first unless resumption is off.
#[test]
fn the_generator_counts_exactly_over_h3_closed_and_open_loop() {
    let Some(runtime) = brigade_runtimes::RUNTIMES
        .iter()
        .find(|r| r.offers(brigade_kit::limits::ServeProtocol::H3))
    else {
        return;
    };
    let (d, url, _) = start(runtime.name, Wire::H3);
    let scenario = brigade_load::Registry::new().load("hello").unwrap();
    let counted = |requests| LoadConfig {
        targets: [("*".to_owned(), url.clone())].into(),
        users: Some(2),
        duration: None,
        requests: Some(requests),
        warmup: Duration::ZERO,
        threads: 1,
        protocol: Protocol::H3,
        tls: TlsClient {
            insecure: true,
            ..TlsClient::default()
        },
        ..LoadConfig::default()
    };
    let closed = engine::run(&counted(40), &scenario).unwrap();
    let t = &closed.total;
    assert_eq!((t.requests, t.ok), (40, 40), "{:?}", t.errors);
    assert!(t.bytes_sent > 0 && t.bytes_received > 0);
    let tls = closed.tls.as_ref().expect("h3 reports its handshakes");
    assert_eq!(tls.alpn.as_deref(), Some("h3"));
    assert_eq!(tls.full.count + tls.resumed.count, 2, "{tls:?}");
    let open = LoadConfig {
        rate: Some(200.0),
        connections: 2,
        users: None,
        streams: 2,
        duration: Some(Duration::from_millis(500)),
        requests: None,
        ..counted(1)
    };
    let paced = engine::run(&open, &scenario).unwrap();
    let t = &paced.total;
    assert_eq!((t.requests, t.ok), (100, 100), "{:?}", t.errors);

    let fresh_each = LoadConfig {
        keepalive: false,
        users: Some(1),
        ..counted(12)
    };
    let tls = engine::run(&fresh_each, &scenario).unwrap().tls.unwrap();
    assert_eq!(tls.full.count + tls.resumed.count, 12, "{tls:?}");
    assert!(tls.full.count >= 1 && tls.resumed.count >= 1, "{tls:?}");
    let never = LoadConfig {
        tls: TlsClient {
            resumption: false,
            ..fresh_each.tls.clone()
        },
        ..fresh_each
    };
    let tls = engine::run(&never, &scenario).unwrap().tls.unwrap();
    assert_eq!((tls.full.count, tls.resumed.count), (12, 0), "{tls:?}");
    d.shutdown();
}

/// The stop with an idle HTTP/3 connection open, on every runtime that offers h3: the connection
/// is closed at once (the shared loop's GOAWAY, or xitca-web's close of a connection with no
/// request running), so the stop takes less than the drain, and the client sees its connection
/// closed rather than left to QUIC's idle timer. The keep-alive and head limits are longer than
/// the grace, so neither closes it first.
#[test]
fn an_idle_h3_connection_ends_with_the_stop_not_the_drain() {
    let long = Duration::from_secs(20);
    let limits = ServerLimits {
        header_read_timeout: long,
        keep_alive_timeout: long,
        ..ServerLimits::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let offering = brigade_runtimes::RUNTIMES
        .iter()
        .filter(|r| r.offers(brigade_kit::limits::ServeProtocol::H3));
    for runtime in offering {
        let first = brigade_restaurant::services().into_iter().next().unwrap();
        let services = brigade_launch::Services::from(vec![first]);
        let d = Deployment::start_over(
            &services,
            runtime.name,
            StoreKind::Memory,
            None,
            limits,
            Wire::H3,
        )
        .unwrap();
        let url = d.url(&d.services()[0]);
        let addr: SocketAddr = url.trim_start_matches("https://").parse().unwrap();
        let endpoint = {
            let _on = rt.enter();
            h3_endpoint(&d)
        };
        let (ended_tx, ended_rx) = std::sync::mpsc::channel();
        let send = rt.block_on(async {
            let quic = endpoint.connect(addr, "localhost").unwrap().await.unwrap();
            let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(quic))
                .await
                .unwrap();
            tokio::spawn(async move {
                let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
                let _ = ended_tx.send(());
            });
            let health = request(Method::GET, &url, "/health").body(()).unwrap();
            let (status, _) = h3_answer(&mut send, health, None).await.unwrap();
            assert_eq!(status, 200, "{}", runtime.name);
            send
        });
        let stopping = std::time::Instant::now();
        d.shutdown();
        let took = stopping.elapsed();
        eprintln!(
            "{}: stopped in {took:?} with an idle h3 connection open",
            runtime.name
        );
        assert!(
            took < brigade_runtimes::DRAIN,
            "{}: the stop took {took:?} with an idle h3 connection open: the drain's end ({:?}), \
             not the connection's close",
            runtime.name,
            brigade_runtimes::DRAIN
        );
        assert!(
            ended_rx.recv_timeout(Duration::from_secs(5)).is_ok(),
            "{}: the client's connection is still open after the server stopped",
            runtime.name
        );
        drop(send);
        endpoint.close(0u32.into(), b"");
    }
}

macro_rules! one_runtime {
    ($runtime:ident, $name:literal,) => {
        mod $runtime {
            use super::*;

            #[test]
            fn limits_hold_over_h2c() {
                check($name, Wire::H2c);
            }

            #[test]
            fn limits_hold_over_h1_tls() {
                check($name, Wire::H1Tls);
            }

            #[test]
            fn limits_hold_over_h2_tls() {
                check($name, Wire::H2Tls);
            }

            #[test]
            fn limits_hold_over_h3_where_offered() {
                check_h3($name);
            }
        }
    };
}

brigade_runtimes::for_each_runtime!(one_runtime!());
