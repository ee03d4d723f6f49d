//! The four protocols end to end against the test server speaking HTTP/1.1 and HTTP/2, plaintext
//! and over TLS: exact counts in closed and open loop, streams in flight on one connection, big
//! HTTP/2 bodies, TLS session resumption, and the runs TLS must refuse (no protocol in common, a
//! certificate not trusted).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brigade_load::engine::{self, LoadConfig};
use brigade_records::protocol::{Protocol, TlsClient};

use super::support::{self, Answer, Http2Limits, ServerOptions};
use super::{captures_feed_later_requests, config, one_route, things_server_with};

/// A closed-loop run of exactly `requests` requests over `protocol`, no warm-up.
fn counted(url: &str, protocol: Protocol, requests: u64) -> LoadConfig {
    LoadConfig {
        protocol,
        duration: None,
        requests: Some(requests),
        warmup: Duration::ZERO,
        tls: TlsClient {
            insecure: true,
            ..TlsClient::default()
        },
        ..config(url)
    }
}

/// A server for `protocol` answering 200 `ok`, recording each request's HTTP version.
fn versioned_server(protocol: Protocol) -> (support::TestServer, Arc<Mutex<Vec<String>>>) {
    let versions = Arc::new(Mutex::new(Vec::new()));
    let seen = versions.clone();
    let server = support::serve_with(ServerOptions::both(protocol.tls()), move |req| {
        seen.lock().unwrap().push(req.version);
        async { Answer::Reply(200, "ok".into()) }
    });
    (server, versions)
}

#[test]
fn every_protocol_completes_closed_and_open_loop_runs_with_exact_counts() {
    let mut plain_h1_bytes = 0;
    // (The test server speaks TCP only: h3 is run against Brigade's own servers, with the same
    // exact counts, in the workspace's tests/suite/conformance/protocols.rs.)
    for protocol in Protocol::ALL.into_iter().filter(|p| !p.quic()) {
        let (server, versions) = versioned_server(protocol);
        let closed = engine::run(&counted(&server.url(), protocol, 40), &one_route("/p")).unwrap();
        let t = &closed.total;
        assert_eq!((t.requests, t.ok), (40, 40), "{protocol}: {:?}", t.errors);
        assert_eq!(t.errors.total(), 0, "{protocol}");
        assert!(t.bytes_sent > 0 && t.bytes_received > 0, "{protocol}");
        match protocol {
            Protocol::H1 => plain_h1_bytes = t.bytes_sent + t.bytes_received,
            // The same requests and answers, in TLS records and after handshakes: more bytes.
            Protocol::H1Tls => assert!(t.bytes_sent + t.bytes_received > plain_h1_bytes),
            _ => {}
        }
        assert_eq!(closed.settings.protocol, protocol);
        let want = if protocol.http2() {
            "HTTP/2.0"
        } else {
            "HTTP/1.1"
        };
        assert!(
            versions.lock().unwrap().iter().all(|v| v == want),
            "{protocol}"
        );
        match &closed.tls {
            Some(tls) => {
                assert!(protocol.tls());
                let alpn = if protocol.http2() { "h2" } else { "http/1.1" };
                assert_eq!(tls.alpn.as_deref(), Some(alpn));
                // Two users, kept alive: one handshake each.
                assert_eq!(tls.full.count + tls.resumed.count, 2, "{tls:?}");
            }
            None => assert!(!protocol.tls()),
        }

        let open = LoadConfig {
            rate: Some(200.0),
            connections: 2,
            users: None,
            streams: if protocol.http2() { 2 } else { 1 },
            duration: Some(Duration::from_millis(500)),
            requests: None,
            ..counted(&server.url(), protocol, 1)
        };
        let paced = engine::run(&open, &one_route("/p")).unwrap();
        let t = &paced.total;
        assert_eq!((t.requests, t.ok), (100, 100), "{protocol}: {:?}", t.errors);
        assert_eq!(paced.settings.streams, open.streams);
    }
}

#[test]
fn four_streams_put_four_requests_in_flight_on_one_connection() {
    // The first four requests wait until all four have arrived: the run can only go on if the
    // one user's one connection carries four at once.
    let barrier = Arc::new(tokio::sync::Barrier::new(4));
    let seen = Arc::new(AtomicU64::new(0));
    let server = support::serve_with(ServerOptions::both(false), move |_| {
        let (barrier, n) = (barrier.clone(), seen.fetch_add(1, Ordering::SeqCst));
        async move {
            if n < 4 {
                barrier.wait().await;
            }
            Answer::Reply(200, "ok".into())
        }
    });
    let cfg = LoadConfig {
        users: Some(1),
        threads: 1,
        streams: 4,
        ..counted(&server.url(), Protocol::H2c, 12)
    };
    let result = engine::run(&cfg, &one_route("/")).unwrap();
    assert_eq!(result.total.ok, 12, "{:?}", result.total.errors);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    assert_eq!(server.max_in_flight.load(Ordering::SeqCst), 4);
}

#[test]
fn http2_answers_with_big_bodies_complete() {
    const BIG: usize = 512 * 1024;
    let big = |tls| {
        support::serve_with(ServerOptions::both(tls), |_| async {
            Answer::Reply(200, "x".repeat(BIG))
        })
    };
    let (plain, tls) = (big(false), big(true));
    for (protocol, url) in [(Protocol::H2c, plain.url()), (Protocol::H2Tls, tls.url())] {
        let cfg = LoadConfig {
            streams: 2,
            ..counted(&url, protocol, 12)
        };
        let result = engine::run(&cfg, &one_route("/big")).unwrap();
        let t = &result.total;
        assert_eq!(t.ok, 12, "{protocol}: {:?}", t.errors);
        assert!(t.bytes_received >= 12 * BIG as u64, "{protocol}: {t:?}");
    }
}

/// A scenario of one POST of `body_len` bytes to `path`.
fn one_post(path: &str, body_len: usize) -> brigade_load::scenario::Scenario {
    brigade_load::scenario::Scenario::parse(
        &format!(
            "name = \"t\"\n[[request]]\nmethod = \"POST\"\npath = \"{path}\"\nbody = '{}'\n",
            "x".repeat(body_len)
        ),
        "t",
    )
    .unwrap()
}

#[test]
fn http2_keeps_to_a_servers_stream_limit_and_small_windows_with_big_bodies() {
    const BODY: usize = 100 * 1024;
    const BIG: usize = 16 << 20;
    let limits = Http2Limits {
        max_streams: 2,
        stream_window: 1000,
        goaway_after: None,
    };
    let tight = |tls| {
        let options = ServerOptions {
            http2_limits: Some(limits),
            ..ServerOptions::both(tls)
        };
        support::serve_with(options, |req| async move {
            match req.path.as_str() {
                "/big" => Answer::Reply(200, "x".repeat(BIG)),
                // The whole request body arrived, within the server's windows.
                _ if req.body.len() == BODY => Answer::Reply(200, "ok".into()),
                _ => Answer::Reply(400, format!("{} bytes", req.body.len())),
            }
        })
    };
    let (plain, tls) = (tight(false), tight(true));
    for (protocol, server) in [(Protocol::H2c, &plain), (Protocol::H2Tls, &tls)] {
        let cfg = LoadConfig {
            users: Some(1),
            threads: 1,
            streams: 8,
            timeout: Duration::from_secs(60),
            ..counted(&server.url(), protocol, 24)
        };
        let posts = engine::run(&cfg, &one_post("/post", BODY)).unwrap();
        let t = &posts.total;
        assert_eq!(t.ok, 24, "{protocol}: {:?}", t.errors);
        assert!(t.bytes_sent >= 24 * BODY as u64, "{protocol}: {t:?}");
        assert!(server.max_in_flight.load(Ordering::SeqCst) <= 2);
        let big = LoadConfig {
            streams: 4,
            ..counted(&server.url(), protocol, 4)
        };
        let big = engine::run(
            &LoadConfig {
                timeout: Duration::from_secs(60),
                ..big
            },
            &one_route("/big"),
        )
        .unwrap();
        let t = &big.total;
        assert_eq!(t.ok, 4, "{protocol}: {:?}", t.errors);
        assert!(t.bytes_received >= 4 * BIG as u64, "{protocol}: {t:?}");
    }
}

#[test]
fn http2_moves_to_a_new_connection_after_a_servers_goaway() {
    let limits = Http2Limits {
        max_streams: 100,
        stream_window: 65_535,
        goaway_after: Some(5),
    };
    let options = ServerOptions {
        http2_limits: Some(limits),
        ..ServerOptions::both(false)
    };
    let server = support::serve_with(options, |_| async { Answer::Reply(200, "ok".into()) });
    let cfg = LoadConfig {
        users: Some(1),
        threads: 1,
        streams: 4,
        ..counted(&server.url(), Protocol::H2c, 60)
    };
    let result = engine::run(&cfg, &one_route("/")).unwrap();
    let t = &result.total;
    // Streams the server had not taken when it went away fail as resets; the others are answered,
    // and new ones go on a new connection.
    let errors = &t.errors;
    assert_eq!(t.ok + errors.reset, 60, "{errors:?}");
    assert!(t.ok >= 30, "{t:?}");
    assert!(server.connections.load(Ordering::SeqCst) >= 60 / 5 / 2);
}

#[test]
fn without_keepalive_tls_sessions_are_resumed_unless_resumption_is_off() {
    for protocol in [Protocol::H1Tls, Protocol::H2Tls] {
        let server = support::serve_with(ServerOptions::both(true), |_| async {
            Answer::Reply(200, "ok".into())
        });
        let cfg = LoadConfig {
            keepalive: false,
            users: Some(1),
            threads: 1,
            ..counted(&server.url(), protocol, 20)
        };
        let result = engine::run(&cfg, &one_route("/")).unwrap();
        assert_eq!(result.total.ok, 20, "{protocol}: {:?}", result.total.errors);
        let summary = brigade_load::table::render(&result);
        assert!(summary.contains("TLS handshakes: "), "{summary}");
        assert!(
            summary.contains(&format!("protocol: {protocol}")),
            "{summary}"
        );
        let tls = result.tls.expect("a TLS run has a TLS section");
        assert_eq!(
            tls.full.count + tls.resumed.count,
            20,
            "{protocol}: {tls:?}"
        );
        assert!(
            tls.full.count >= 1 && tls.resumed.count >= 1,
            "{protocol}: {tls:?}"
        );
        assert!(tls.handshakes_per_s > 0.0);

        let fresh = LoadConfig {
            tls: TlsClient {
                resumption: false,
                ..cfg.tls.clone()
            },
            ..cfg
        };
        let tls = engine::run(&fresh, &one_route("/")).unwrap().tls.unwrap();
        assert_eq!((tls.full.count, tls.resumed.count), (20, 0), "{protocol}");
    }
}

#[test]
fn h2_over_tls_against_an_http1_only_server_fails_saying_why() {
    let server = support::serve_with(
        ServerOptions {
            http2: false,
            tls_alpn: Some(vec!["http/1.1"]),
            ..ServerOptions::default()
        },
        |_| async { Answer::Reply(200, "ok".into()) },
    );
    let err =
        engine::run(&counted(&server.url(), Protocol::H2Tls, 5), &one_route("/")).unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("h2-tls") && text.contains("ALPN"), "{text}");
    // The same server over h1-tls is fine.
    let ok = engine::run(&counted(&server.url(), Protocol::H1Tls, 5), &one_route("/")).unwrap();
    assert_eq!(ok.total.ok, 5);
}

#[test]
fn a_self_signed_certificate_is_refused_unless_insecure() {
    let server = support::serve_with(ServerOptions::both(true), |_| async {
        Answer::Reply(200, "ok".into())
    });
    let cfg = LoadConfig {
        tls: TlsClient::default(),
        ..counted(&server.url(), Protocol::H1Tls, 5)
    };
    let text = format!("{:#}", engine::run(&cfg, &one_route("/")).unwrap_err());
    assert!(
        text.contains("certificate") && text.contains("--tls-insecure"),
        "{text}"
    );
}

#[test]
fn a_certificate_from_a_trusted_ca_is_accepted_without_insecure() {
    let server = support::serve_with(
        ServerOptions {
            issued_by_ca: true,
            ..ServerOptions::both(true)
        },
        |_| async { Answer::Reply(200, "ok".into()) },
    );
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, server.ca_pem.as_deref().unwrap()).unwrap();
    let trusting = LoadConfig {
        tls: TlsClient {
            ca: Some(ca),
            ..TlsClient::default()
        },
        ..counted(&server.url(), Protocol::H2Tls, 5)
    };
    let result = engine::run(&trusting, &one_route("/")).unwrap();
    assert_eq!(result.total.ok, 5, "{:?}", result.total.errors);
    // The web's roots alone do not trust it.
    let web = LoadConfig {
        tls: TlsClient::default(),
        ..trusting
    };
    let text = format!("{:#}", engine::run(&web, &one_route("/")).unwrap_err());
    assert!(text.contains("certificate"), "{text}");
}

#[test]
fn setup_steps_and_captures_work_over_http2_with_streams() {
    let (server, things, wrong) = things_server_with(ServerOptions::both(true));
    let cfg = LoadConfig {
        targets: BTreeMap::from([("api".to_string(), server.url())]),
        users: Some(4),
        streams: 2,
        ..counted("unused", Protocol::H2Tls, 400)
    };
    captures_feed_later_requests(&cfg, &things, &wrong);
}

#[test]
fn http2_streams_the_server_resets_are_resets_and_slow_ones_time_out() {
    let server = support::serve_with(ServerOptions::both(false), |req| async move {
        if req.path == "/slow" {
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        Answer::Hangup
    });
    let reset = engine::run(&counted(&server.url(), Protocol::H2c, 10), &one_route("/")).unwrap();
    assert_eq!(reset.total.errors.reset, 10, "{:?}", reset.total.errors);
    let before = server.connections.load(Ordering::SeqCst);
    let slow = LoadConfig {
        timeout: Duration::from_millis(200),
        users: Some(1),
        streams: 2,
        ..counted(&server.url(), Protocol::H2c, 4)
    };
    let timed_out = engine::run(&slow, &one_route("/slow")).unwrap();
    assert_eq!(
        timed_out.total.errors.timeout, 4,
        "{:?}",
        timed_out.total.errors
    );
    // The latency a timeout reached is at least the timeout (a lower bound the run imposes).
    assert!(timed_out.total.latency.p50_ms >= 200.0);
    // The cancelled streams were reset, not the connection: one connection carried them all.
    assert_eq!(server.connections.load(Ordering::SeqCst) - before, 1);
}

#[test]
fn mutual_tls_presents_the_client_certificate() {
    let server = support::serve_with(
        ServerOptions {
            client_auth: true,
            ..ServerOptions::both(true)
        },
        |_| async { Answer::Reply(200, "ok".into()) },
    );
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let (cert, key) = server.client_pem.clone().unwrap();
    for protocol in [Protocol::H1Tls, Protocol::H2Tls] {
        let cfg = LoadConfig {
            tls: TlsClient {
                ca: Some(write("ca.pem", server.ca_pem.as_deref().unwrap())),
                client_cert: Some(write("client.pem", &cert)),
                client_key: Some(write("client.key", &key)),
                ..TlsClient::default()
            },
            ..counted(&server.url(), protocol, 6)
        };
        let result = engine::run(&cfg, &one_route("/")).unwrap();
        assert_eq!(result.total.ok, 6, "{protocol}: {:?}", result.total.errors);
        // Without the client certificate the server refuses every connection.
        let anonymous = LoadConfig {
            tls: TlsClient {
                client_cert: None,
                client_key: None,
                ..cfg.tls.clone()
            },
            ..cfg
        };
        let refused = engine::run(&anonymous, &one_route("/"));
        assert!(
            refused.as_ref().map_or(true, |r| r.total.ok == 0),
            "{protocol}: {refused:?}"
        );
    }
}

#[test]
fn an_https_target_needs_a_tls_protocol() {
    let server = support::serve_with(ServerOptions::both(true), |_| async {
        Answer::Reply(200, "ok".into())
    });
    let cfg = counted(&server.url(), Protocol::H2c, 5);
    let text = format!("{:#}", engine::run(&cfg, &one_route("/")).unwrap_err());
    assert!(text.contains("--protocol h1-tls"), "{text}");
    let streams = LoadConfig {
        streams: 2,
        ..counted(&support::dead_url(), Protocol::H1, 5)
    };
    let text = format!("{:#}", engine::run(&streams, &one_route("/")).unwrap_err());
    assert!(text.contains("HTTP/2"), "{text}");
}
