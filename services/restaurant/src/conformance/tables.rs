//! The tables service: unique numbers, seating (asking the waiter service), release, delete.

use brigade_kit::conformance::TestClient;
use bytes::Bytes;
use serde_json::{json, Value};

use super::fixtures::{new_waiter, unique_number};
use super::Target;

/// Tables: create, unique numbers, seat (asking the waiter service), release, delete.
pub async fn tables_and_seating(c: &TestClient, t: &Target) {
    let n = unique_number();
    let id = creates_with_unique_numbers(c, t, n).await;
    let url = format!("{}/tables/{id}", t.tables);
    let seat = format!("{url}/seat");
    seats_a_valid_party(c, t, &id, &seat).await;
    releases_once(c, t, &url).await;
    refuses_an_inactive_waiter(c, t, &seat).await;
    c.delete(&url).await.expect(204, "delete");
    c.get(&url).await.expect(404, "get deleted");
    c.post(
        &format!("{}/tables", t.tables),
        json!({"number": n, "seats": 2}),
    )
    .await
    .expect(201, "number free again");
}

/// A table is created free with table number `n`, a second one with the same number is refused;
/// answers the table's id.
async fn creates_with_unique_numbers(c: &TestClient, t: &Target, n: u64) -> String {
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
    id
}

/// Seating asks the waiter service and checks the party; an occupied table is neither seated again
/// nor deleted, and lists as occupied.
async fn seats_a_valid_party(c: &TestClient, t: &Target, id: &str, seat: &str) {
    let url = format!("{}/tables/{id}", t.tables);
    let a = c
        .post(seat, json!({"party_size": 2, "waiter_id": "nobody"}))
        .await
        .expect(422, "unknown waiter");
    assert!(a.json["error"]["message"]
        .as_str()
        .unwrap()
        .contains("waiter"));
    let waiter = new_waiter(c, t).await;
    c.post(seat, json!({"party_size": 5, "waiter_id": waiter}))
        .await
        .expect(422, "party larger than seats");
    c.post(seat, json!({"party_size": 0, "waiter_id": waiter}))
        .await
        .expect(422, "empty party");
    c.post(
        &format!("{}/tables/nope/seat", t.tables),
        json!({"party_size": 2, "waiter_id": waiter}),
    )
    .await
    .expect(404, "seat a missing table");
    let s = c
        .post(seat, json!({"party_size": 3, "waiter_id": waiter}))
        .await
        .expect(200, "seat");
    assert_eq!(s.json["status"], "occupied");
    assert_eq!(s.json["waiter_id"], json!(waiter));
    assert_eq!(s.json["party_size"], 3);
    c.post(seat, json!({"party_size": 1, "waiter_id": waiter}))
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
}

/// Release frees an occupied table once; a free or missing table cannot be released.
async fn releases_once(c: &TestClient, t: &Target, url: &str) {
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
}

/// An inactive waiter cannot be given a table.
async fn refuses_an_inactive_waiter(c: &TestClient, t: &Target, seat: &str) {
    let inactive = new_waiter(c, t).await;
    c.put(
        &format!("{}/waiters/{inactive}", t.waiter),
        json!({"active": false}),
    )
    .await
    .expect(200, "deactivate");
    c.post(seat, json!({"party_size": 2, "waiter_id": inactive}))
        .await
        .expect(422, "inactive waiter");
}
