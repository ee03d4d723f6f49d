//! Histograms merge exactly: across threads (inside the engine) and across runs (`result::merge`),
//! percentiles come from the merged distribution, never from averaging percentiles; concurrent
//! shards (`result::merge_shards`) over their common window.

use std::time::Duration;

use brigade_records::histogram::LatencyHistogram;
use brigade_records::result::{self, Errors, LoadResult, LoadSettings, Machine, RouteResult};

fn route(name: &str, latency_ms: u64, n: u64, elapsed_s: f64) -> RouteResult {
    let mut h = LatencyHistogram::new();
    for _ in 0..n {
        h.record(Duration::from_millis(latency_ms));
    }
    RouteResult {
        name: name.into(),
        requests: n,
        ok: n - 1,
        errors: Errors {
            status_5xx: 1,
            ..Errors::default()
        },
        bytes_sent: 100 * n,
        bytes_received: 200 * n,
        hits_per_s: n as f64 / elapsed_s,
        bytes_per_s: 300.0 * n as f64 / elapsed_s,
        latency: h.latency(),
        histogram: h.encode(),
        statuses: [("2xx".to_string(), n - 1), ("5xx".to_string(), 1)].into(),
        warmup_statuses: [("2xx".to_string(), 2)].into(),
    }
}

fn run(latency_ms: u64, n: u64, elapsed_s: f64, extra: Option<&str>) -> LoadResult {
    let mut routes = vec![route("GET /a", latency_ms, n, elapsed_s)];
    if let Some(name) = extra {
        routes.push(route(name, latency_ms, n, elapsed_s));
    }
    let mut total = route("total", latency_ms, n * routes.len() as u64, elapsed_s);
    total.errors.status_5xx = routes.len() as u64;
    LoadResult {
        settings: LoadSettings {
            targets: vec!["*=http://127.0.0.1:1".into()],
            scenario: "t".into(),
            users: Some(1),
            rate: None,
            connections: 1,
            duration_s: Some(elapsed_s),
            requests: None,
            warmup_s: 0.0,
            keepalive: true,
            threads: 1,
            timeout_ms: 1000,
            think_ms: 0,
            pace_tick_ms: None,
            seed: None,
            shard: None,
            protocol: Default::default(),
            streams: 1,
        },
        machine: Machine::default(),
        started_at: "2025-01-01T00:00:00Z".into(),
        elapsed_s,
        generator_cpu_percent: 50.0 * latency_ms as f64,
        total,
        routes,
        seconds: Vec::new(),
        sub_windows: Vec::new(),
        window: None,
        shards: Vec::new(),
        tls: None,
        attempt: None,
        interrupted: None,
    }
}

#[test]
fn merged_histograms_hold_every_value() {
    let mut a = LatencyHistogram::new();
    let mut b = LatencyHistogram::new();
    for _ in 0..900 {
        a.record(Duration::from_millis(1));
    }
    for _ in 0..100 {
        b.record(Duration::from_millis(100));
    }
    a.merge(&b);
    assert_eq!(a.len(), 1000);
    let l = a.latency();
    assert!((l.p50_ms - 1.0).abs() < 0.01, "{l:?}");
    assert!((l.p99_ms - 100.0).abs() < 0.1, "{l:?}");
    assert!((l.mean_ms - 10.9).abs() < 0.05, "{l:?}");
}

#[test]
fn a_histogram_survives_encoding() {
    let mut h = LatencyHistogram::new();
    for us in [5u64, 50, 500, 5_000, 50_000, 500_000] {
        h.record(Duration::from_micros(us));
    }
    let text = h.encode();
    assert!(text.len() < 200, "compressed: {} chars", text.len());
    let back = LatencyHistogram::decode(&text).unwrap();
    assert_eq!(back.len(), 6);
    assert_eq!(back.latency(), h.latency());
    assert!(LatencyHistogram::decode("not base64!").is_err());
    assert!(LatencyHistogram::decode("aGVsbG8=").is_err());
}

#[test]
fn runs_merge_as_one_long_run() {
    // Run one: 1000 requests at 1 ms over 10 s; run two: 1000 at 100 ms over 30 s.
    let merged = result::merge(&[
        run(1, 1000, 10.0, None),
        run(100, 1000, 30.0, Some("GET /b")),
    ])
    .unwrap();
    assert_eq!(merged.elapsed_s, 40.0);
    assert_eq!(merged.total.requests, 3000);
    assert_eq!(merged.total.errors.status_5xx, 3);
    assert_eq!(merged.total.ok, 3000 - 2);
    assert_eq!(merged.total.bytes_sent, 300_000);
    assert!((merged.total.hits_per_s - 75.0).abs() < 1e-9);
    assert!((merged.total.bytes_per_s - 300.0 * 3000.0 / 40.0).abs() < 1e-6);
    // One third of the values are 1 ms: the median is 100 ms, not the mean of two medians.
    assert!(
        (merged.total.latency.p50_ms - 100.0).abs() < 0.1,
        "{:?}",
        merged.total.latency
    );
    assert!((merged.total.latency.p90_ms - 100.0).abs() < 0.1);
    assert!(merged.total.latency.mean_ms > 60.0 && merged.total.latency.mean_ms < 70.0);
    assert_eq!(merged.total.histogram().unwrap().len(), 3000);

    let a = merged.routes.iter().find(|r| r.name == "GET /a").unwrap();
    assert_eq!(a.requests, 2000);
    assert!(
        (a.latency.p50_ms - 1.0).abs() < 0.01,
        "an even split falls on the low side: {:?}",
        a.latency
    );
    assert!((a.hits_per_s - 50.0).abs() < 1e-9);
    // A route only the second run had keeps its counts, over the merged time.
    let b = merged.routes.iter().find(|r| r.name == "GET /b").unwrap();
    assert_eq!(b.requests, 1000);
    assert!((b.hits_per_s - 25.0).abs() < 1e-9);
    // Generator CPU: weighted by measured time (50% for 10 s, 5000% for 30 s).
    assert!((merged.generator_cpu_percent - (50.0 * 10.0 + 5000.0 * 30.0) / 40.0).abs() < 1e-9);
    assert!(result::merge(&[]).is_err());
}

/// `run`, as shard `index` of `count` measuring from `start` (UNIX seconds) for `elapsed_s`.
fn shard(
    index: u32,
    count: u32,
    start: f64,
    latency_ms: u64,
    n: u64,
    elapsed_s: f64,
) -> LoadResult {
    let mut r = run(latency_ms, n, elapsed_s, None);
    r.settings.shard = Some(brigade_records::shard::Shard { index, count });
    r.window = Some(result::Window {
        start_unix_s: start,
        end_unix_s: start + elapsed_s,
    });
    r.seconds = (0..elapsed_s as u32)
        .map(|second| result::Second {
            second,
            requests: n / elapsed_s as u64,
            errors: 0,
            p50_ms: latency_ms as f64,
            p99_ms: latency_ms as f64,
        })
        .collect();
    r
}

#[test]
fn concurrent_shards_merge_over_their_common_window() {
    // Three shards of 10 s each, the last starting 2 s late: the common window is 12 s, not 30.
    let mut parts = [
        shard(0, 3, 1000.0, 1, 1000, 10.0),
        shard(2, 3, 1002.0, 100, 1000, 10.0),
        shard(1, 3, 1000.0, 1, 1000, 10.0),
    ];
    for p in &mut parts {
        p.settings.seed = Some(7);
    }
    assert_eq!(result::merge_shards(&parts).unwrap().settings.seed, Some(7));
    parts[1].settings.seed = Some(8);
    let merged = result::merge_shards(&parts).unwrap();
    assert_eq!(merged.elapsed_s, 12.0);
    assert_eq!(merged.total.requests, 3000);
    assert!((merged.total.hits_per_s - 250.0).abs() < 1e-9);
    assert_eq!(merged.settings.users, Some(3));
    assert_eq!(merged.settings.shard, None);
    assert_eq!(merged.settings.seed, None, "the parts had different seeds");
    assert_eq!(merged.total.histogram().unwrap().len(), 3000);
    // Two thirds of the values are 1 ms: p50 is 1 ms, p90 100 ms, from the merged histogram.
    assert!((merged.total.latency.p50_ms - 1.0).abs() < 0.01);
    assert!((merged.total.latency.p90_ms - 100.0).abs() < 0.1);
    // Generator CPU adds up: three processes.
    assert!((merged.generator_cpu_percent - (50.0 + 5000.0 + 50.0)).abs() < 1e-9);
    // The parts, in shard order, and the per-second series on one clock.
    let order: Vec<u32> = merged
        .shards
        .iter()
        .map(|p| p.shard.unwrap().index)
        .collect();
    assert_eq!(order, [0, 1, 2]);
    assert_eq!(merged.seconds.len(), 12);
    assert_eq!(merged.seconds[0].requests, 200, "shards 0 and 1 only");
    assert_eq!(merged.seconds[5].requests, 300, "all three");
    assert_eq!(merged.seconds[11].requests, 100, "shard 2 only");
    assert_eq!(merged.seconds[5].p99_ms, 100.0, "the worst shard's");
}

#[test]
fn merging_refuses_a_missing_or_doubled_shard_and_results_without_a_window() {
    let missing =
        result::merge_shards(&[shard(0, 3, 0.0, 1, 10, 1.0), shard(2, 3, 0.0, 1, 10, 1.0)]);
    assert!(missing.unwrap_err().to_string().contains("1/3"));
    let doubled =
        result::merge_shards(&[shard(0, 2, 0.0, 1, 10, 1.0), shard(0, 2, 0.0, 1, 10, 1.0)]);
    assert!(doubled.unwrap_err().to_string().contains("twice"));
    let mixed = result::merge_shards(&[shard(0, 2, 0.0, 1, 10, 1.0), shard(0, 3, 0.0, 1, 10, 1.0)]);
    assert!(mixed.is_err());
    let old = result::merge_shards(&[run(1, 10, 1.0, None)]);
    assert!(old.unwrap_err().to_string().contains("window"));
    assert!(result::merge_shards(&[]).is_err());
}

/// A TLS section of `full` and `resumed` handshakes taking `ms` each.
fn tls_section(full: u64, resumed: u64, ms: u64) -> result::TlsResult {
    let histogram = |n: u64| {
        let mut h = LatencyHistogram::new();
        for _ in 0..n {
            h.record(Duration::from_millis(ms));
        }
        result::HandshakeResult::from_histogram(&h)
    };
    result::TlsResult {
        alpn: Some("h2".into()),
        full: histogram(full),
        resumed: histogram(resumed),
        handshakes_per_s: 0.0,
    }
}

#[test]
fn shards_with_tls_sections_add_their_handshakes() {
    let mut parts = [
        shard(0, 2, 1000.0, 1, 100, 10.0),
        shard(1, 2, 1000.0, 1, 100, 10.0),
    ];
    parts[0].tls = Some(tls_section(3, 40, 2));
    parts[1].tls = Some(tls_section(5, 60, 10));
    let merged = result::merge_shards(&parts).unwrap();
    let tls = merged
        .tls
        .expect("the merged run has the parts' TLS section");
    assert_eq!((tls.full.count, tls.resumed.count), (8, 100));
    assert!((tls.handshakes_per_s - 10.8).abs() < 1e-9, "{tls:?}");
    assert!(
        (tls.full.max_ms - 10.0).abs() < 0.01,
        "from the merged histogram: {tls:?}"
    );
    assert_eq!(tls.alpn.as_deref(), Some("h2"));
    // One after the other, as one long run.
    let serial = result::merge(&parts).unwrap().tls.unwrap();
    assert_eq!(serial.full.count + serial.resumed.count, 108);
    assert!((serial.handshakes_per_s - 5.4).abs() < 1e-9);
}

#[test]
fn a_result_from_before_protocols_reads_as_plaintext_http1() {
    let mut json = serde_json::to_value(run(1, 10, 1.0, None)).unwrap();
    let settings = json["settings"].as_object_mut().unwrap();
    settings.remove("protocol");
    settings.remove("streams");
    json.as_object_mut().unwrap().remove("tls");
    let old: LoadResult = serde_json::from_value(json).unwrap();
    assert_eq!(
        old.settings.protocol,
        brigade_records::protocol::Protocol::H1
    );
    assert_eq!((old.settings.streams, old.tls), (1, None));
}

#[test]
fn answers_by_status_class_add_up_warm_up_apart() {
    let parts = [
        shard(0, 2, 1000.0, 1, 100, 10.0),
        shard(1, 2, 1000.0, 1, 100, 10.0),
    ];
    let merged = result::merge_shards(&parts).unwrap();
    let route = &merged.routes[0];
    assert_eq!(route.statuses["2xx"], 198);
    assert_eq!(route.statuses["5xx"], 2);
    assert_eq!(route.warmup_statuses["2xx"], 4);
}

#[test]
fn a_lost_attempt_is_listed_not_counted_and_its_retry_is_named() {
    let mut lost = shard(1, 2, 1000.0, 1, 40, 4.0);
    lost.interrupted = Some("stopped from outside (SIGTERM) after 4.0 s".into());
    let mut retry = shard(1, 2, 1020.0, 1, 100, 10.0);
    retry.attempt = Some(2);
    let parts = [shard(0, 2, 1000.0, 1, 100, 10.0), lost, retry];
    let merged = result::merge_shards(&parts).unwrap();
    assert_eq!(
        merged.total.requests, 200,
        "the lost attempt's 40 are not counted"
    );
    let listed: Vec<(u32, Option<u32>, bool)> = merged
        .shards
        .iter()
        .map(|p| (p.shard.unwrap().index, p.attempt, p.interrupted.is_some()))
        .collect();
    assert_eq!(
        listed,
        [(0, None, false), (1, None, true), (1, Some(2), false)]
    );
    // The window is the counted parts' only: from 1000 to the retry's end.
    assert_eq!(merged.elapsed_s, 30.0);
    // A shard whose only attempt was lost is missing, and the error names the lost attempt.
    let mut only_lost = shard(1, 2, 1000.0, 1, 40, 4.0);
    only_lost.interrupted = Some("stopped".into());
    let err = result::merge_shards(&[shard(0, 2, 1000.0, 1, 100, 10.0), only_lost]).unwrap_err();
    let words = format!("{err:#}");
    assert!(
        words.contains("1/2") && words.contains("lost attempts"),
        "{words}"
    );
}
