//! Races the store settles: of many identical conditional requests at once, exactly one wins.

use brigade_kit::conformance::{exactly_one_wins, TestClient};
use serde_json::json;

use super::fixtures::{new_table, new_waiter, seated_table};
use super::Target;

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
