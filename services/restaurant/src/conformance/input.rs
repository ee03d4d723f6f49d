//! Bad input in the restaurant's own terms: every rule of its domain types answers 422 with a message
//! naming the field, and ids that look like query operators or paths are plain strings. (The error
//! answers every service gives — 400, 404, 405, 413, 415 — are the kit's checks.)

use brigade_kit::conformance::TestClient;
use serde_json::json;

use super::fixtures::new_table;
use super::Target;

/// Every rule of the domain types is a 422 whose message starts with the field it is about.
pub async fn domain_rules_are_422_naming_the_field(c: &TestClient, t: &Target) {
    let w = format!("{}/waiters", t.waiter);
    c.send("POST", &w, Some("application/json"), "[1,2]")
        .await
        .expect(422, "an array, not an object");
    let a = c
        .post(&w, json!({"name": "x".repeat(101), "shift": "night"}))
        .await
        .expect(422, "long name");
    assert!(a.message().starts_with("name"), "{}", a.json);
    let a = c
        .post(&w, json!({"name": "A", "shift": "noon"}))
        .await
        .expect(422, "bad shift");
    assert!(a.message().starts_with("shift"), "{}", a.json);
    c.post(&w, json!({"name": "A"}))
        .await
        .expect(422, "missing shift");
    c.post(&w, json!({"name": 12, "shift": "night"}))
        .await
        .expect(422, "name of the wrong type");
    c.post(&w, json!({"name": "A", "shift": "night", "tips": 3}))
        .await
        .expect(422, "an unknown field");
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
        assert!(a.message().starts_with(field), "{}", a.json);
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
