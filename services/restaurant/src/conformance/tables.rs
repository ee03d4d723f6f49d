//! The tables service: unique numbers, seating (asking the waiter service), release, delete.

use brigade_kit::conformance::TestClient;
use bytes::Bytes;
use serde_json::{json, Value};

use super::fixtures::{new_waiter, unique_number};
use super::Target;

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
