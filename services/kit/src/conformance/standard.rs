//! The standard routes every service carries (`crate::standard`): `/health` names the service,
//! runtime and store, `/ready` answers 200 while the store can be reached, and the bench endpoints
//! answer the same on every runtime.

use serde_json::json;

use super::TestClient;

/// `/health` is 200 `{"status":"ok","service","runtime","store"}`; `/ready` is 200.
pub async fn health_and_readiness(
    c: &TestClient,
    base: &str,
    service: &str,
    runtime: &str,
    store: &str,
) {
    let h = c
        .get(&format!("{base}/health"))
        .await
        .expect(200, &format!("{service} /health"));
    assert_eq!(
        h.json,
        json!({"status": "ok", "service": service, "runtime": runtime, "store": store})
    );
    c.get(&format!("{base}/ready"))
        .await
        .expect(200, &format!("{service} /ready"));
}

/// The bench endpoints answer the same on every runtime: hello, bytes both ways, strings counted
/// and reversed, static bodies, and their size rules.
pub async fn bench_endpoints(c: &TestClient, base: &str) {
    let b = base;
    let h = c
        .get(&format!("{b}/bench/hello"))
        .await
        .expect(200, "hello");
    assert_eq!(&h.body[..], crate::standard::HELLO.as_bytes());
    assert!(h.content_type.starts_with("text/plain"));
    named_hello(c, b).await;
    let payload = vec![7u8; 100 * 1024];
    let a = c
        .send(
            "POST",
            &format!("{b}/bench/bytes"),
            Some("application/octet-stream"),
            payload,
        )
        .await
        .expect(200, "send 100 KB");
    assert_eq!(a.json["length"], 100 * 1024);
    let a = c
        .get(&format!("{b}/bench/bytes/1000"))
        .await
        .expect(200, "get 1000 bytes");
    assert_eq!(a.body.len(), 1000);
    c.get(&format!("{b}/bench/bytes/x"))
        .await
        .expect(400, "bytes n not a number");
    let strings: Vec<String> = (0..5000).map(|i| format!("string number {i}")).collect();
    let a = c
        .post(&format!("{b}/bench/strings"), json!(strings))
        .await
        .expect(200, "send strings");
    assert_eq!(a.json["count"], 5000);
    let a = c
        .post(&format!("{b}/bench/strings/reverse"), json!(strings))
        .await
        .expect(200, "reverse strings");
    let back = a.json.as_array().expect("an array");
    assert_eq!(back.len(), 5000);
    assert_eq!(back[0], "string number 4999");
    assert_eq!(back[4999], "string number 0");
    c.post(&format!("{b}/bench/strings"), json!([1, 2]))
        .await
        .expect(422, "not strings");
    for size in [256, 4096, 524_288] {
        let a = c
            .get(&format!("{b}/bench/static/{size}"))
            .await
            .expect(200, "static");
        assert_eq!(a.body.len(), size);
    }
    c.get(&format!("{b}/bench/static/255"))
        .await
        .expect(422, "static too small");
    c.get(&format!("{b}/bench/static/524289"))
        .await
        .expect(422, "static too large");
    let big = vec![0u8; 2 << 20];
    c.send(
        "POST",
        &format!("{b}/bench/bytes"),
        Some("application/octet-stream"),
        big,
    )
    .await
    .expect(200, "2 MiB on a bench route");
}

/// A human-readable path parameter, decoded once by the kit whatever the runtime's router does:
/// `%2F` is a `/` in the value (never a segment break), `+` stays `+`, a bad escape stays as it
/// is; a parameter that is not UTF-8 once decoded is a 400.
async fn named_hello(c: &TestClient, b: &str) {
    for (raw, name) in [
        ("Zo%C3%AB", "Zoë"),
        ("AC%2FDC", "AC/DC"),
        ("C++", "C++"),
        ("C%2B%2B", "C++"),
        ("100%25", "100%"),
        ("Ada%20Lovelace", "Ada Lovelace"),
        ("%41da", "Ada"),
        ("a%zz", "a%zz"),
    ] {
        let a = c
            .get(&format!("{b}/bench/hello/{raw}"))
            .await
            .expect(200, &format!("hello/{raw}"));
        assert_eq!(a.json["name"], name, "hello/{raw}");
        assert_eq!(a.json["greeting"], format!("Hello, {name}!"), "hello/{raw}");
    }
    c.get(&format!("{b}/bench/hello/%C3"))
        .await
        .expect(400, "a name that is not UTF-8");
}
