//! The kitchen service: orders taken for occupied tables only (asking the tables service), grown by
//! appends, moved through their states.

use brigade_kit::conformance::TestClient;
use serde_json::{json, Value};

use super::fixtures::{new_table, seated_table};
use super::Target;

/// Orders: taken for occupied tables only, grow, move through their states.
pub async fn kitchen_orders(c: &TestClient, t: &Target) {
    let orders = format!("{}/orders", t.kitchen);
    let item = json!({"dish": "soup", "qty": 2});
    let table = refuses_bad_orders(c, t, &orders, &item).await;
    let url = takes_an_order(c, &orders, &table, &item).await;
    appends_keep_their_order(c, &url).await;
    moves_through_its_states(c, &url, &item).await;
    lists_by_table_and_status(c, &orders, &table).await;
    cancels_deletes_and_misses(c, &orders, &url, &table, &item).await;
}

/// Orders for a free or missing table, and invalid items, are refused; answers the seated table the
/// later steps order for.
async fn refuses_bad_orders(c: &TestClient, t: &Target, orders: &str, item: &Value) -> String {
    let free = new_table(c, t, 4).await;
    let a = c
        .post(orders, json!({"table_id": free, "items": [item]}))
        .await
        .expect(422, "order for a free table");
    assert!(a.json["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("table_id"));
    c.post(orders, json!({"table_id": "nope", "items": [item]}))
        .await
        .expect(422, "order for a missing table");
    let table = seated_table(c, t).await;
    c.post(orders, json!({"table_id": table, "items": []}))
        .await
        .expect(422, "no items");
    c.post(
        orders,
        json!({"table_id": table, "items": [{"dish": "soup", "qty": 51}]}),
    )
    .await
    .expect(422, "qty 51");
    c.post(
        orders,
        json!({"table_id": table, "items": [{"dish": "", "qty": 1}]}),
    )
    .await
    .expect(422, "empty dish");
    let many: Vec<Value> = (0..101).map(|_| item.clone()).collect();
    c.post(orders, json!({"table_id": table, "items": many}))
        .await
        .expect(422, "101 items");
    table
}

/// A valid order is queued with its items and timestamps and reads back the same; answers its URL.
async fn takes_an_order(c: &TestClient, orders: &str, table: &str, item: &Value) -> String {
    let o = c
        .post(
            orders,
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
    url
}

/// Appends grow the order and keep their order.
async fn appends_keep_their_order(c: &TestClient, url: &str) {
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
    let g = c.get(url).await.expect(200, "get grown");
    assert_eq!(
        g.json["items"][4]["dish"], "extra 2",
        "appends keep their order"
    );
}

/// queued→cooking→ready→served, appends only while queued or cooking, served is final.
async fn moves_through_its_states(c: &TestClient, url: &str, item: &Value) {
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
}

/// Lists filter by table and by status.
async fn lists_by_table_and_status(c: &TestClient, orders: &str, table: &str) {
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
}

/// A queued order can be cancelled, an order deleted, and a missing order answers 404.
async fn cancels_deletes_and_misses(
    c: &TestClient,
    orders: &str,
    url: &str,
    table: &str,
    item: &Value,
) {
    let o2 = c
        .post(orders, json!({"table_id": table, "items": [item]}))
        .await
        .expect(201, "second order");
    let id2 = o2.json["id"].as_str().unwrap();
    c.post(
        &format!("{orders}/{id2}/status"),
        json!({"status": "cancelled"}),
    )
    .await
    .expect(200, "cancel queued");
    c.delete(url).await.expect(204, "delete");
    c.get(url).await.expect(404, "get deleted");
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
