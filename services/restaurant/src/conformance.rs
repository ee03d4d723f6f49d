//! The black-box conformance suite: every route, every status code, the cross-service flows and the
//! races, checked over real sockets against a running deployment of the three services. Every
//! runtime × store combination runs it (see the root `tests/conformance.rs`), the way juniper's
//! `run_http_test_suite` runs against each of its integrations.
//!
//! A deployment implements [`Deployment`]; [`run_suite`] runs every check. Checks are public so a
//! failure names the rule that broke.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

/// The base URLs of a running deployment.
#[derive(Debug, Clone)]
pub struct Target {
    /// The waiter service, e.g. `http://127.0.0.1:8081`.
    pub waiter: String,
    /// The tables service.
    pub tables: String,
    /// The kitchen service.
    pub kitchen: String,
}

/// A running deployment under test.
pub trait Deployment {
    /// Where its services listen.
    fn target(&self) -> Target;
    /// The runtime it runs on, as `/health` reports it.
    fn runtime(&self) -> String;
    /// The store it uses, as `/health` reports it.
    fn store(&self) -> String;
    /// Stops the waiter service (tables keeps running and must answer 502/503 when it needs it).
    fn stop_waiter(&mut self);
}

/// A status and a JSON body (`Value::Null` when the body is not JSON).
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: String,
    /// The body, parsed as JSON if it is.
    pub json: Value,
    /// The raw body.
    pub body: Bytes,
}

impl Answer {
    /// Asserts the status and, for an error, the JSON error body's code.
    #[track_caller]
    pub fn expect(self, status: u16, what: &str) -> Answer {
        assert_eq!(
            self.status,
            status,
            "{what}: expected {status}, got {} {}",
            self.status,
            String::from_utf8_lossy(&self.body)
        );
        if status >= 400 {
            let code = self.json["error"]["code"].as_str().unwrap_or("");
            assert!(
                !code.is_empty(),
                "{what}: error without a JSON error body: {}",
                String::from_utf8_lossy(&self.body)
            );
            assert!(
                self.json["error"]["message"].is_string(),
                "{what}: error body lacks a message"
            );
            assert_eq!(
                self.content_type, "application/json",
                "{what}: error content type"
            );
        }
        self
    }

    /// The error code of an error answer.
    pub fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }
}

/// A small HTTP client for the suite: keep-alive, a timeout per request.
#[derive(Clone)]
pub struct TestClient {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TestClient")
    }
}

impl Default for TestClient {
    fn default() -> Self {
        TestClient {
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }
}

impl TestClient {
    /// Sends any request; an error if the server cannot be reached or drops the connection.
    pub async fn try_send(
        &self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        body: impl Into<Bytes>,
    ) -> Result<Answer, String> {
        let mut req = hyper::Request::builder().method(method).uri(url);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let req = req
            .body(Full::new(body.into()))
            .map_err(|e| e.to_string())?;
        let resp = self
            .client
            .request(req)
            .await
            .map_err(|e| format!("{e:?}"))?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Ok(Answer {
            status,
            content_type,
            json,
            body,
        })
    }

    /// Sends any request; panics if there is no answer within 10 s (a hang is a failure).
    pub async fn send(
        &self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        body: impl Into<Bytes>,
    ) -> Answer {
        tokio::time::timeout(
            Duration::from_secs(10),
            self.try_send(method, url, content_type, body),
        )
        .await
        .unwrap_or_else(|_| panic!("{method} {url}: no answer within 10 s"))
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"))
    }

    /// POSTs a JSON value; `None` when the server cannot be reached or drops the connection.
    pub async fn try_post(&self, url: &str, body: Value) -> Option<Answer> {
        self.try_send("POST", url, Some("application/json"), body.to_string())
            .await
            .ok()
    }

    /// GET.
    pub async fn get(&self, url: &str) -> Answer {
        self.send("GET", url, None, Bytes::new()).await
    }

    /// POST a JSON value.
    pub async fn post(&self, url: &str, body: Value) -> Answer {
        self.send("POST", url, Some("application/json"), body.to_string())
            .await
    }

    /// PUT a JSON value.
    pub async fn put(&self, url: &str, body: Value) -> Answer {
        self.send("PUT", url, Some("application/json"), body.to_string())
            .await
    }

    /// DELETE.
    pub async fn delete(&self, url: &str) -> Answer {
        self.send("DELETE", url, None, Bytes::new()).await
    }
}

fn unique_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
        % 1_000_000_000;
    base + NEXT.fetch_add(1, Ordering::Relaxed) * 1_000_000_007 % 1_000_000
}

/// Creates a waiter and returns its id.
pub async fn new_waiter(c: &TestClient, t: &Target) -> String {
    let w = c
        .post(
            &format!("{}/waiters", t.waiter),
            json!({"name": "Ana", "shift": "evening"}),
        )
        .await
        .expect(201, "create waiter");
    w.json["id"].as_str().unwrap().to_string()
}

/// Creates a free table with `seats` seats and returns its id.
pub async fn new_table(c: &TestClient, t: &Target, seats: u32) -> String {
    let n = unique_number();
    let a = c
        .post(
            &format!("{}/tables", t.tables),
            json!({"number": n, "seats": seats}),
        )
        .await
        .expect(201, "create table");
    a.json["id"].as_str().unwrap().to_string()
}

/// Creates a table and seats a party there; returns the table's id.
pub async fn seated_table(c: &TestClient, t: &Target) -> String {
    let waiter = new_waiter(c, t).await;
    let table = new_table(c, t, 4).await;
    c.post(
        &format!("{}/tables/{table}/seat", t.tables),
        json!({"party_size": 2, "waiter_id": waiter}),
    )
    .await
    .expect(200, "seat");
    table
}

/// Runs every check, then stops the waiter and checks the peer-down behaviour.
pub async fn run_suite(d: &mut impl Deployment) {
    let t = d.target();
    let c = TestClient::default();
    health_and_readiness(&c, &t, &d.runtime(), &d.store()).await;
    waiter_crud(&c, &t).await;
    lists_page_and_filter(&c, &t).await;
    bad_input_is_a_clear_4xx(&c, &t).await;
    hostile_ids_are_plain_not_found(&c, &t).await;
    tables_and_seating(&c, &t).await;
    kitchen_orders(&c, &t).await;
    bench_endpoints(&c, &t).await;
    fifty_concurrent_seats_give_exactly_one_200(&c, &t).await;
    racing_status_changes_give_exactly_one_200(&c, &t).await;
    d.stop_waiter();
    waiter_down_gives_502_or_503_quickly(&c, &t).await;
}

/// `/health` names the service, runtime and store; `/ready` is 200.
pub async fn health_and_readiness(c: &TestClient, t: &Target, runtime: &str, store: &str) {
    for (name, base) in [
        ("waiter", &t.waiter),
        ("tables", &t.tables),
        ("kitchen", &t.kitchen),
    ] {
        let h = c.get(&format!("{base}/health")).await.expect(200, "health");
        assert_eq!(
            h.json,
            json!({"status": "ok", "service": name, "runtime": runtime, "store": store})
        );
        c.get(&format!("{base}/ready")).await.expect(200, "ready");
    }
}

/// Waiters: create, read, update, delete, with the designed shapes and statuses.
pub async fn waiter_crud(c: &TestClient, t: &Target) {
    let w = c
        .post(
            &format!("{}/waiters", t.waiter),
            json!({"name": "Bo", "shift": "morning"}),
        )
        .await
        .expect(201, "create");
    let id = w.json["id"].as_str().expect("an id").to_string();
    assert_eq!(
        w.json,
        json!({"id": id, "name": "Bo", "shift": "morning", "active": true})
    );
    let url = format!("{}/waiters/{id}", t.waiter);
    assert_eq!(c.get(&url).await.expect(200, "get").json, w.json);
    let u = c
        .put(&url, json!({"shift": "night", "active": false}))
        .await
        .expect(200, "update");
    assert_eq!(
        u.json,
        json!({"id": id, "name": "Bo", "shift": "night", "active": false})
    );
    let u = c
        .put(&url, json!({"name": "Bob"}))
        .await
        .expect(200, "rename");
    assert_eq!(u.json["name"], "Bob");
    assert_eq!(u.json["shift"], "night");
    c.put(&url, json!({"name": ""}))
        .await
        .expect(422, "empty name");
    c.put(&format!("{}/waiters/nope", t.waiter), json!({"name": "X"}))
        .await
        .expect(404, "update missing");
    c.delete(&url).await.expect(204, "delete");
    c.get(&url).await.expect(404, "get deleted");
    c.delete(&url).await.expect(404, "delete twice");
}

/// Lists are `{"items","total"}` with limit/offset and filters.
pub async fn lists_page_and_filter(c: &TestClient, t: &Target) {
    for _ in 0..3 {
        c.post(
            &format!("{}/waiters", t.waiter),
            json!({"name": "Night", "shift": "night"}),
        )
        .await
        .expect(201, "create");
    }
    let all = c
        .get(&format!("{}/waiters?shift=night", t.waiter))
        .await
        .expect(200, "list");
    let total = all.json["total"].as_u64().unwrap();
    assert!(total >= 3);
    assert!(all.json["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["shift"] == "night"));
    let page = c
        .get(&format!(
            "{}/waiters?shift=night&limit=2&offset=1",
            t.waiter
        ))
        .await
        .expect(200, "page");
    assert_eq!(page.json["total"].as_u64().unwrap(), total);
    assert_eq!(page.json["items"].as_array().unwrap().len(), 2);
    assert_eq!(
        page.json["items"][0], all.json["items"][1],
        "offset 1 starts at the second item"
    );
    c.get(&format!("{}/waiters?limit=501", t.waiter))
        .await
        .expect(422, "limit over 500");
    c.get(&format!("{}/waiters?limit=abc", t.waiter))
        .await
        .expect(400, "limit not a number");
    c.get(&format!("{}/waiters?shift=noon", t.waiter))
        .await
        .expect(400, "unknown shift filter");
    c.get(&format!("{}/tables?status=free", t.tables))
        .await
        .expect(200, "tables by status");
    c.get(&format!("{}/orders?status=queued", t.kitchen))
        .await
        .expect(200, "orders by status");
}

/// 400, 404, 405, 413, 415 and 422, each with the JSON error body and a message naming the field.
pub async fn bad_input_is_a_clear_4xx(c: &TestClient, t: &Target) {
    let w = format!("{}/waiters", t.waiter);
    let a = c
        .send("POST", &w, Some("application/json"), "{\"name\": ")
        .await
        .expect(400, "malformed JSON");
    assert_eq!(a.code(), "bad_request");
    c.send("POST", &w, Some("application/json"), "")
        .await
        .expect(400, "empty body");
    c.send("POST", &w, Some("application/json"), "[1,2]")
        .await
        .expect(422, "an array, not an object");
    let a = c
        .send(
            "POST",
            &w,
            Some("text/plain"),
            r#"{"name":"A","shift":"night"}"#,
        )
        .await
        .expect(415, "text/plain");
    assert_eq!(a.code(), "unsupported_media_type");
    c.send("POST", &w, None, r#"{"name":"A","shift":"night"}"#)
        .await
        .expect(415, "no content type");
    let a = c
        .post(&w, json!({"name": "x".repeat(101), "shift": "night"}))
        .await
        .expect(422, "long name");
    assert!(
        a.json["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("name"),
        "{}",
        a.json
    );
    let a = c
        .post(&w, json!({"name": "A", "shift": "noon"}))
        .await
        .expect(422, "bad shift");
    assert!(a.json["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("shift"));
    c.post(&w, json!({"name": "A"}))
        .await
        .expect(422, "missing shift");
    c.post(&w, json!({"name": 12, "shift": "night"}))
        .await
        .expect(422, "name of the wrong type");
    let big = format!(r#"{{"name":"{}","shift":"night"}}"#, "x".repeat(1 << 20));
    let a = c
        .send("POST", &w, Some("application/json"), big)
        .await
        .expect(413, "over 1 MiB");
    assert_eq!(a.code(), "payload_too_large");
    let a = c
        .get(&format!("{}/no/such/path", t.waiter))
        .await
        .expect(404, "unknown path");
    assert_eq!(a.code(), "not_found");
    let a = c
        .send("PATCH", &w, Some("application/json"), "{}")
        .await
        .expect(405, "wrong method");
    assert_eq!(a.code(), "method_not_allowed");
    c.delete(&format!("{}/tables", t.tables))
        .await
        .expect(405, "DELETE on a list");
    let tables = format!("{}/tables", t.tables);
    for (body, field) in [
        (json!({"number": 0, "seats": 4}), "number"),
        (json!({"number": -5, "seats": 4}), "number"),
        (json!({"number": 1e40, "seats": 4}), "number"),
        (json!({"number": 1, "seats": 21}), "seats"),
        (json!({"number": 1, "seats": 0}), "seats"),
    ] {
        let a = c
            .post(&tables, body.clone())
            .await
            .expect(422, &format!("table {body}"));
        assert!(
            a.json["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with(field),
            "{}",
            a.json
        );
    }
}

/// Ids that look like query operators are plain strings: not found, or refused as ids.
pub async fn hostile_ids_are_plain_not_found(c: &TestClient, t: &Target) {
    for id in ["$gt", "%7B%22%24ne%22%3A1%7D", "%24where", "..%2F..%2Fetc"] {
        c.get(&format!("{}/waiters/{id}", t.waiter))
            .await
            .expect(404, id);
        c.get(&format!("{}/tables/{id}", t.tables))
            .await
            .expect(404, id);
        c.get(&format!("{}/orders/{id}", t.kitchen))
            .await
            .expect(404, id);
    }
    let table = new_table(c, t, 4).await;
    let seat = format!("{}/tables/{table}/seat", t.tables);
    c.post(&seat, json!({"party_size": 2, "waiter_id": {"$ne": 1}}))
        .await
        .expect(422, "operator object as id");
    c.post(&seat, json!({"party_size": 2, "waiter_id": "$gt"}))
        .await
        .expect(422, "operator string as id");
    c.post(
        &format!("{}/orders", t.kitchen),
        json!({"table_id": {"$gt": ""}, "items": [{"dish": "a", "qty": 1}]}),
    )
    .await
    .expect(422, "operator object as table id");
    c.get(&format!(
        "{}/orders?table_id=%7B%22%24ne%22%3A1%7D",
        t.kitchen
    ))
    .await
    .expect(200, "operator as filter");
}

/// Tables: create, unique numbers, seat (asking the waiter service), release, delete.
pub async fn tables_and_seating(c: &TestClient, t: &Target) {
    let n = unique_number();
    let a = c
        .post(
            &format!("{}/tables", t.tables),
            json!({"number": n, "seats": 4}),
        )
        .await
        .expect(201, "create");
    let id = a.json["id"].as_str().unwrap().to_string();
    assert_eq!(
        a.json,
        json!({"id": id, "number": n, "seats": 4, "status": "free", "waiter_id": null, "party_size": null})
    );
    let a = c
        .post(
            &format!("{}/tables", t.tables),
            json!({"number": n, "seats": 2}),
        )
        .await
        .expect(409, "duplicate number");
    assert_eq!(a.code(), "conflict");
    let url = format!("{}/tables/{id}", t.tables);
    assert_eq!(
        c.get(&url).await.expect(200, "get").json["number"],
        json!(n)
    );

    let seat = format!("{url}/seat");
    let a = c
        .post(&seat, json!({"party_size": 2, "waiter_id": "nobody"}))
        .await
        .expect(422, "unknown waiter");
    assert!(a.json["error"]["message"]
        .as_str()
        .unwrap()
        .contains("waiter"));
    let waiter = new_waiter(c, t).await;
    c.post(&seat, json!({"party_size": 5, "waiter_id": waiter}))
        .await
        .expect(422, "party larger than seats");
    c.post(&seat, json!({"party_size": 0, "waiter_id": waiter}))
        .await
        .expect(422, "empty party");
    c.post(
        &format!("{}/tables/nope/seat", t.tables),
        json!({"party_size": 2, "waiter_id": waiter}),
    )
    .await
    .expect(404, "seat a missing table");
    let s = c
        .post(&seat, json!({"party_size": 3, "waiter_id": waiter}))
        .await
        .expect(200, "seat");
    assert_eq!(s.json["status"], "occupied");
    assert_eq!(s.json["waiter_id"], json!(waiter));
    assert_eq!(s.json["party_size"], 3);
    c.post(&seat, json!({"party_size": 1, "waiter_id": waiter}))
        .await
        .expect(409, "seat an occupied table");
    c.delete(&url).await.expect(409, "delete while occupied");
    let occupied = c
        .get(&format!("{}/tables?status=occupied&limit=500", t.tables))
        .await
        .expect(200, "list occupied");
    assert!(occupied.json["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["id"] == json!(id)));

    let r = c
        .send("POST", &format!("{url}/release"), None, Bytes::new())
        .await
        .expect(200, "release");
    assert_eq!(r.json["status"], "free");
    assert_eq!(r.json["waiter_id"], Value::Null);
    c.send("POST", &format!("{url}/release"), None, Bytes::new())
        .await
        .expect(409, "release a free table");
    c.send(
        "POST",
        &format!("{}/tables/nope/release", t.tables),
        None,
        Bytes::new(),
    )
    .await
    .expect(404, "release missing");

    let inactive = new_waiter(c, t).await;
    c.put(
        &format!("{}/waiters/{inactive}", t.waiter),
        json!({"active": false}),
    )
    .await
    .expect(200, "deactivate");
    c.post(&seat, json!({"party_size": 2, "waiter_id": inactive}))
        .await
        .expect(422, "inactive waiter");

    c.delete(&url).await.expect(204, "delete");
    c.get(&url).await.expect(404, "get deleted");
    c.post(
        &format!("{}/tables", t.tables),
        json!({"number": n, "seats": 2}),
    )
    .await
    .expect(201, "number free again");
}

/// Orders: taken for occupied tables only, grow, move through their states.
pub async fn kitchen_orders(c: &TestClient, t: &Target) {
    let orders = format!("{}/orders", t.kitchen);
    let item = json!({"dish": "soup", "qty": 2});
    let free = new_table(c, t, 4).await;
    let a = c
        .post(&orders, json!({"table_id": free, "items": [item]}))
        .await
        .expect(422, "order for a free table");
    assert!(a.json["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("table_id"));
    c.post(&orders, json!({"table_id": "nope", "items": [item]}))
        .await
        .expect(422, "order for a missing table");
    let table = seated_table(c, t).await;
    c.post(&orders, json!({"table_id": table, "items": []}))
        .await
        .expect(422, "no items");
    c.post(
        &orders,
        json!({"table_id": table, "items": [{"dish": "soup", "qty": 51}]}),
    )
    .await
    .expect(422, "qty 51");
    c.post(
        &orders,
        json!({"table_id": table, "items": [{"dish": "", "qty": 1}]}),
    )
    .await
    .expect(422, "empty dish");
    let many: Vec<Value> = (0..101).map(|_| item.clone()).collect();
    c.post(&orders, json!({"table_id": table, "items": many}))
        .await
        .expect(422, "101 items");

    let o = c
        .post(
            &orders,
            json!({"table_id": table, "items": [item, {"dish": "tea", "qty": 1, "notes": "hot"}]}),
        )
        .await
        .expect(201, "order");
    let id = o.json["id"].as_str().unwrap().to_string();
    assert_eq!(o.json["status"], "queued");
    assert_eq!(o.json["table_id"], json!(table));
    assert_eq!(o.json["items"].as_array().unwrap().len(), 2);
    assert!(o.json["created_at"].is_string() && o.json["updated_at"].is_string());
    let url = format!("{orders}/{id}");
    assert_eq!(c.get(&url).await.expect(200, "get").json, o.json);

    for n in 0..3 {
        let g = c
            .post(
                &format!("{url}/items"),
                json!({"items": [{"dish": format!("extra {n}"), "qty": 1}]}),
            )
            .await
            .expect(200, "append");
        assert_eq!(g.json["items"].as_array().unwrap().len(), 3 + n);
    }
    let g = c.get(&url).await.expect(200, "get grown");
    assert_eq!(
        g.json["items"][4]["dish"], "extra 2",
        "appends keep their order"
    );

    let status = format!("{url}/status");
    c.post(&status, json!({"status": "ready"}))
        .await
        .expect(409, "queued to ready skips cooking");
    c.post(&status, json!({"status": "boiling"}))
        .await
        .expect(422, "unknown status");
    c.post(&status, json!({"status": "cooking"}))
        .await
        .expect(200, "cooking");
    c.post(&format!("{url}/items"), json!({"items": [item]}))
        .await
        .expect(200, "append while cooking");
    c.post(&status, json!({"status": "ready"}))
        .await
        .expect(200, "ready");
    c.post(&format!("{url}/items"), json!({"items": [item]}))
        .await
        .expect(409, "append when ready");
    c.post(&status, json!({"status": "cancelled"}))
        .await
        .expect(409, "cancel when ready");
    let s = c
        .post(&status, json!({"status": "served"}))
        .await
        .expect(200, "served");
    assert_eq!(s.json["status"], "served");
    c.post(&status, json!({"status": "queued"}))
        .await
        .expect(409, "served is final");

    let by_table = c
        .get(&format!("{orders}?table_id={table}"))
        .await
        .expect(200, "list by table");
    assert_eq!(by_table.json["total"], 1);
    let served = c
        .get(&format!("{orders}?status=served&limit=500"))
        .await
        .expect(200, "list by status");
    assert!(served.json["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["status"] == "served"));

    let o2 = c
        .post(&orders, json!({"table_id": table, "items": [item]}))
        .await
        .expect(201, "second order");
    let id2 = o2.json["id"].as_str().unwrap();
    c.post(
        &format!("{orders}/{id2}/status"),
        json!({"status": "cancelled"}),
    )
    .await
    .expect(200, "cancel queued");
    c.delete(&url).await.expect(204, "delete");
    c.get(&url).await.expect(404, "get deleted");
    c.post(&format!("{orders}/nope/items"), json!({"items": [item]}))
        .await
        .expect(404, "append to missing");
    c.post(
        &format!("{orders}/nope/status"),
        json!({"status": "cooking"}),
    )
    .await
    .expect(404, "status of missing");
}

/// The bench endpoints answer the same on every runtime.
pub async fn bench_endpoints(c: &TestClient, t: &Target) {
    let b = &t.waiter;
    let h = c
        .get(&format!("{b}/bench/hello"))
        .await
        .expect(200, "hello");
    assert_eq!(&h.body[..], b"Hello, World!");
    assert!(h.content_type.starts_with("text/plain"));
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
    let back = a.json.as_array().unwrap();
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
    let huge = vec![0u8; (16 << 20) + 1];
    c.send(
        "POST",
        &format!("{b}/bench/bytes"),
        Some("application/octet-stream"),
        huge,
    )
    .await
    .expect(413, "over 16 MiB");
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

/// Sends `n` copies of one POST at once: exactly one must answer 200, every other 409.
pub async fn exactly_one_wins(c: &TestClient, url: &str, body: Value, n: usize) {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (c, url, body) = (c.clone(), url.to_string(), body.clone());
            tokio::spawn(async move { c.post(&url, body).await.status })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    let wins = statuses.iter().filter(|&&s| s == 200).count();
    assert_eq!(wins, 1, "{url}: {statuses:?}");
    assert!(
        statuses.iter().all(|&s| s == 200 || s == 409),
        "{url}: {statuses:?}"
    );
}

/// 50 concurrent seat requests on one free table: exactly one 200, the rest 409.
pub async fn fifty_concurrent_seats_give_exactly_one_200(c: &TestClient, t: &Target) {
    let waiter = new_waiter(c, t).await;
    let table = new_table(c, t, 4).await;
    let url = format!("{}/tables/{table}/seat", t.tables);
    exactly_one_wins(c, &url, json!({"party_size": 2, "waiter_id": waiter}), 50).await;
}

/// 20 racing `queued → cooking` changes of one order: exactly one wins, the rest get 409.
pub async fn racing_status_changes_give_exactly_one_200(c: &TestClient, t: &Target) {
    let table = seated_table(c, t).await;
    let o = c
        .post(
            &format!("{}/orders", t.kitchen),
            json!({"table_id": table, "items": [{"dish": "soup", "qty": 1}]}),
        )
        .await
        .expect(201, "order");
    let url = format!(
        "{}/orders/{}/status",
        t.kitchen,
        o.json["id"].as_str().unwrap()
    );
    exactly_one_wins(c, &url, json!({"status": "cooking"}), 20).await;
}

/// With the waiter service stopped, seating answers 502/503 quickly, never hangs.
pub async fn waiter_down_gives_502_or_503_quickly(c: &TestClient, t: &Target) {
    let table = new_table(c, t, 4).await;
    let started = Instant::now();
    let a = c
        .post(
            &format!("{}/tables/{table}/seat", t.tables),
            json!({"party_size": 2, "waiter_id": "someone"}),
        )
        .await;
    let took = started.elapsed();
    let status = a.status;
    assert!(
        status == 502 || status == 503,
        "expected 502/503, got {status} {}",
        a.json
    );
    a.expect(status, "waiter down");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let table = c
        .get(&format!("{}/tables/{table}", t.tables))
        .await
        .expect(200, "table untouched");
    assert_eq!(table.json["status"], "free");
}
