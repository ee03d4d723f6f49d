use super::*;
use brigade_records::result::{LoadSettings, Machine, RouteResult};

/// Two services: `a` takes POSTs, `b` is read by id, and `b` calls `a` (as tables asks the waiter).
fn scenario() -> Scenario {
    Scenario::parse(
        r#"
name = "pair"
service = "a"

[[setup]]
method = "POST"
path = "/items"
body = '{"n": 1}'
times = 2
capture = { ids = "/id" }

[[request]]
name = "POST /items"
method = "POST"
path = "/items"
body = '{"n": {{seq}}}'
expect = [201, 409]

[[request]]
name = "GET /things/{id}"
service = "b"
path = "/things/{{pick ids}}?full=1"
"#,
        "pair",
    )
    .unwrap()
}

fn statuses(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(c, n)| (c.to_string(), *n)).collect()
}

/// A part that sent `post` and `get` (measured) and `warm` GETs in its warm-up.
fn part(post: &[(&str, u64)], get: &[(&str, u64)], warm: u64) -> LoadResult {
    let route = |name: &str, s: &[(&str, u64)], warm: u64| RouteResult {
        name: name.into(),
        statuses: statuses(s),
        warmup_statuses: if warm > 0 {
            statuses(&[("2xx", warm)])
        } else {
            BTreeMap::new()
        },
        ..RouteResult::default()
    };
    LoadResult {
        settings: LoadSettings {
            scenario: "pair".into(),
            ..LoadSettings::default()
        },
        machine: Machine::default(),
        started_at: String::new(),
        elapsed_s: 1.0,
        generator_cpu_percent: 0.0,
        total: RouteResult::default(),
        routes: vec![
            route("POST /items", post, 0),
            route("GET /things/{id}", get, warm),
        ],
        seconds: vec![],
        sub_windows: vec![],
        window: None,
        shards: vec![],
        tls: None,
        attempt: None,
        interrupted: None,
    }
}

fn metrics(lines: &[(&str, &str, &str, u64)], peer_2xx: u64) -> String {
    let mut text = String::from("# HELP brigade_http_requests_total Requests.\n# TYPE brigade_http_requests_total counter\n");
    for (method, route, class, n) in lines {
        text.push_str(&format!(
            "brigade_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{class}\"}} {n}\n"
        ));
    }
    text.push_str(&format!(
        "brigade_peer_requests_total{{peer=\"a\",status=\"2xx\"}} {peer_2xx}\nprocess_cpu_seconds_total 1.5\n"
    ));
    text
}

fn readings(pods: &[(&str, &str, String)]) -> Readings {
    let mut out = Readings::new();
    for (service, pod, text) in pods {
        out.entry(service.to_string())
            .or_default()
            .insert(pod.to_string(), text.clone());
    }
    out
}

#[test]
fn a_route_key_drops_the_query_and_names_every_placeholder_alike() {
    assert_eq!(route_key("/things/{{pick ids}}?full=1"), "/things/{}");
    assert_eq!(route_key("/things/{id}"), "/things/{}");
    assert_eq!(route_key("/orders/{id}/status"), "/orders/{}/status");
    assert_eq!(route_key("/bench/hello"), "/bench/hello");
}

#[test]
fn labels_read_with_their_escapes() {
    let labels = parse_labels(r#"method="GET",route="/a/{id}",note="say \"hi\"\\n""#).unwrap();
    assert_eq!(labels["route"], "/a/{id}");
    assert_eq!(labels["note"], "say \"hi\"\\n");
    assert!(parse_labels(r#"method="GET"#).is_err());
}

#[test]
fn counts_agree_once_probes_setup_and_warm_up_are_separated() {
    // Before the run: the setup's 2 POSTs and some probes. During it: two parts, and a replica
    // of b that started during the run (it counts from zero).
    let before = readings(&[
        (
            "a",
            "a-1",
            metrics(
                &[("POST", "/items", "2xx", 2), ("GET", "/ready", "2xx", 7)],
                0,
            ),
        ),
        ("b", "b-1", metrics(&[("GET", "/ready", "2xx", 7)], 0)),
    ]);
    let after = readings(&[
        (
            "a",
            "a-1",
            metrics(
                &[
                    ("POST", "/items", "2xx", 2 + 10),
                    ("POST", "/items", "4xx", 1),
                    ("GET", "/ready", "2xx", 12),
                ],
                0,
            ),
        ),
        (
            "b",
            "b-1",
            metrics(
                &[
                    ("GET", "/things/{id}", "2xx", 3),
                    ("GET", "/ready", "2xx", 12),
                ],
                0,
            ),
        ),
        ("b", "b-2", metrics(&[("GET", "/things/{id}", "2xx", 3)], 0)),
    ]);
    let parts = [
        part(&[("2xx", 6), ("4xx", 1)], &[("2xx", 2)], 1),
        part(&[("2xx", 4)], &[("2xx", 2)], 1),
    ];
    let t = tally(&scenario(), &parts, &before, &after).unwrap();
    assert!(t.agrees(), "{:?}", t.problems);
    let row = |route: &str, class: &str| {
        t.rows
            .iter()
            .find(|r| r.key.route == route && r.key.class == class)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (
            row("/items", "2xx").servers,
            row("/items", "2xx").generators
        ),
        (10, 10)
    );
    assert_eq!(row("/items", "4xx").difference(), 0);
    // b's GETs: 4 measured and 2 warm-up, counted on two pods.
    assert_eq!(
        (
            row("/things/{}", "2xx").servers,
            row("/things/{}", "2xx").generators
        ),
        (6, 6)
    );
    // The probes are counted apart, outside the agreement.
    assert!(t
        .outside
        .iter()
        .any(|r| r.key.route == "/ready" && r.servers == 5));
    assert!(t.markdown().contains("outside the run's routes"));
}

#[test]
fn peer_calls_into_a_route_the_scenario_does_not_aim_at_are_named() {
    // b's pods asked `a` 5 times on a GET route the generators never hit.
    let before = readings(&[("a", "a-1", metrics(&[], 0)), ("b", "b-1", metrics(&[], 0))]);
    let after = readings(&[
        ("a", "a-1", metrics(&[("GET", "/items/{id}", "2xx", 5)], 0)),
        ("b", "b-1", metrics(&[("GET", "/things/{id}", "2xx", 2)], 5)),
    ]);
    let parts = [part(&[], &[("2xx", 2)], 0)];
    let t = tally(&scenario(), &parts, &before, &after).unwrap();
    assert_eq!(t.peer_calls[&("a".to_string(), "2xx".to_string())], 5);
    assert!(!t.agrees());
    assert!(
        t.problems[0].contains("5 of 5 peer calls into a"),
        "{:?}",
        t.problems
    );
}

#[test]
fn peer_calls_are_matched_to_the_callees_get_surplus_and_a_gap_is_named() {
    // The scenario reads b by id, and `a` called b 4 times (as tables asks the waiter): b counted
    // 4 more GETs than the generators sent.
    let text = |gets: u64, peer: u64| metrics(&[("GET", "/things/{id}", "2xx", gets)], peer);
    let before = readings(&[("b", "b-1", text(0, 0))]);
    let parts = [part(&[], &[("2xx", 5)], 0)];
    let scenario = scenario();
    // The caller's counter names its peer, b.
    let caller = |n: u64| format!("brigade_peer_requests_total{{peer=\"b\",status=\"2xx\"}} {n}\n");
    let after = readings(&[("b", "b-1", text(9, 0)), ("a", "a-1", caller(4))]);
    let t = tally(&scenario, &parts, &before, &after).unwrap();
    assert!(t.agrees(), "{:?}", t.problems);
    let r = &t.rows[0];
    assert_eq!(
        (r.servers, r.generators, r.peers, r.difference()),
        (9, 5, 4, 0)
    );
    assert!(t.markdown().starts_with("**The servers' counters agree"));
    // One request more than the generators and peers explain: named.
    let after = readings(&[("b", "b-1", text(10, 0)), ("a", "a-1", caller(4))]);
    let t = tally(&scenario, &parts, &before, &after).unwrap();
    assert!(!t.agrees());
    assert!(
        t.problems[0].contains("the servers counted 10, the generators sent 5 and peers called 4"),
        "{:?}",
        t.problems
    );
    assert!(t.markdown().contains("do not agree"));
}

#[test]
fn a_pod_gone_or_restarted_between_the_readings_is_named() {
    let text = |n: u64| metrics(&[("GET", "/things/{id}", "2xx", n)], 0);
    let parts = [part(&[], &[("2xx", 5)], 0)];
    let before = readings(&[("b", "b-1", text(10)), ("b", "b-2", text(1))]);
    let after = readings(&[("b", "b-1", text(2))]);
    let t = tally(&scenario(), &parts, &before, &after).unwrap();
    let words = t.problems.join("; ");
    assert!(words.contains("b-2 was gone"), "{words}");
    assert!(words.contains("b-1: a counter went down"), "{words}");
}

#[test]
fn unanswered_requests_bound_what_the_servers_may_have_counted_beyond_them() {
    let text = |n: u64| metrics(&[("GET", "/things/{id}", "2xx", n)], 0);
    let before = readings(&[("b", "b-1", text(0))]);
    let after = readings(&[("b", "b-1", text(6))]);
    // 5 answered, 2 timed out: one of them reached the server's counter.
    let parts = [part(&[], &[("2xx", 5), ("none", 2)], 0)];
    let t = tally(&scenario(), &parts, &before, &after).unwrap();
    assert!(t.agrees(), "{:?}", t.problems);
    assert_eq!(t.unanswered, 2);
    assert!(t.markdown().contains("within 2 requests nothing answered"));
}
