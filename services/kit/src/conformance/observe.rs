//! What every service shows about itself, checked against its own route table: `/openapi.json`
//! describes exactly the table's routes (no more, no fewer) with the kit's error answers, and
//! `/metrics` has a latency series for every route, counts the requests it answered by route and
//! status class, puts requests no route takes under one label, and reports the process.

use std::collections::BTreeSet;

use super::TestClient;
use crate::http::{Method, RouteSpec};
use crate::observe::UNMATCHED;

/// `/openapi.json` is an OpenAPI 3.1 document whose operations are exactly `routes` (and a bodiless
/// `HEAD` beside each `GET`), each with
/// the 500 every route may give and, on a JSON route, the 400, 413, 415 and 422 of the body rules.
pub async fn openapi_covers_the_route_table(c: &TestClient, base: &str, routes: &[RouteSpec]) {
    let doc = c
        .get(&format!("{base}/openapi.json"))
        .await
        .expect(200, "/openapi.json");
    assert!(doc.content_type.starts_with("application/json"));
    assert_eq!(doc.json["openapi"], "3.1.0");
    let paths = doc.json["paths"].as_object().expect("paths");
    let mut described = BTreeSet::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().expect("a path item") {
            described.insert((method.to_ascii_uppercase(), path.clone()));
            let responses = op["responses"].as_object().expect("responses");
            if method == "head" {
                assert!(
                    responses.values().all(|a| a.get("content").is_none()),
                    "HEAD {path}: an answer with a body"
                );
            }
            assert!(responses.contains_key("500"), "{method} {path}: no 500");
            if op["requestBody"]["content"]["application/json"].is_object() {
                for s in ["400", "413", "415", "422"] {
                    assert!(responses.contains_key(s), "{method} {path}: no {s}");
                }
            }
        }
    }
    // The table's routes, and a HEAD beside every GET (answered by every runtime, without a body).
    let table: BTreeSet<(String, String)> = routes
        .iter()
        .flat_map(|r| {
            let head = (r.method == Method::Get).then(|| ("HEAD".to_string(), r.path.to_string()));
            std::iter::once((r.method.as_str().to_string(), r.path.to_string())).chain(head)
        })
        .collect();
    assert_eq!(
        described, table,
        "{base}/openapi.json must describe exactly the route table"
    );
    let schemas = doc.json["components"]["schemas"]
        .as_object()
        .expect("schemas");
    let text = doc.json.to_string();
    for r in text.match_indices("#/components/schemas/") {
        let name: String = text[r.0 + r.1.len()..]
            .chars()
            .take_while(|c| *c != '"')
            .collect();
        assert!(
            schemas.contains_key(&name),
            "$ref to a missing schema {name}"
        );
    }
}

/// The series of a metrics text: each sample's name and labels, without its value, process
/// samples left out (their names only), comments and `# EOF` dropped.
pub fn metric_series(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let series = l.rsplit_once(' ').map_or(l, |(s, _)| s);
            series.to_string()
        })
        .collect()
}

/// `/metrics` counts what it answered: a latency series per route of the table, a `/health`
/// answered in `2xx`, a request for no route under `route="(unmatched)"`, and the process's CPU
/// and memory.
pub async fn metrics_follow_the_route_table(c: &TestClient, base: &str, routes: &[RouteSpec]) {
    c.get(&format!("{base}/health"))
        .await
        .expect(200, "/health");
    c.get(&format!("{base}/conformance/no/such/path"))
        .await
        .expect_error(404, "not_found", "an unknown path");
    let m = c
        .get(&format!("{base}/metrics"))
        .await
        .expect(200, "/metrics");
    assert!(
        m.content_type.starts_with("application/openmetrics-text"),
        "{}",
        m.content_type
    );
    let text = String::from_utf8_lossy(&m.body).to_string();
    let value = |series: &str| -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    };
    for r in routes {
        let series = format!(
            "brigade_http_request_duration_seconds_count{{method=\"{}\",route=\"{}\"}}",
            r.method, r.path
        );
        assert!(value(&series).is_some(), "no {series} in {base}/metrics");
    }
    let health = "brigade_http_requests_total{method=\"GET\",route=\"/health\",status=\"2xx\"}";
    assert!(value(health).unwrap_or(0.0) >= 1.0, "{health} in\n{text}");
    let unmatched = format!(
        "brigade_http_requests_total{{method=\"GET\",route=\"{UNMATCHED}\",status=\"4xx\"}}"
    );
    assert!(
        value(&unmatched).unwrap_or(0.0) >= 1.0,
        "{unmatched} in\n{text}"
    );
    assert!(
        !text.contains("/conformance/no/such/path"),
        "an unmatched path became a label"
    );
    for name in [
        "brigade_http_requests_in_flight",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
    ] {
        assert!(value(name).is_some(), "no {name} in {base}/metrics");
    }
    assert!(text.ends_with("# EOF\n"));
}
