//! What the checks build on: waiters, free tables and occupied tables, made through the API.

use brigade_kit::conformance::TestClient;
use serde_json::json;

use super::Target;

/// A table number no other check of this process (or a recent one) uses.
pub fn unique_number() -> u64 {
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
