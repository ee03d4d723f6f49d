//! A peer that is down: with the waiter service stopped, seating answers 502/503 quickly, never
//! hangs, and leaves the table as it was.

use std::time::{Duration, Instant};

use brigade_kit::conformance::TestClient;
use serde_json::json;

use super::fixtures::new_table;
use super::Target;

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
