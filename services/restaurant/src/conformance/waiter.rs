//! The waiter service: its CRUD and the list rules (`{"items","total"}`, limit/offset, filters)
//! every list of the restaurant follows.

use brigade_kit::conformance::TestClient;
use serde_json::json;

use super::Target;

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
