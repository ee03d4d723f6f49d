//! The bookmarks service's black-box suite on every runtime × store compiled into `brigade-launch`:
//! the kit's checks every service passes (health, readiness, the error answers its route table
//! implies, the bench endpoints), then its own rules — over real sockets, each combination on a
//! fresh in-process deployment.

use brigade_launch::testing::{
    exactly_one_wins, run_standard_checks, Deployment, Target, TestClient,
};
use serde_json::{json, Value};

async fn suite(d: Deployment) {
    // The deployment's own client: it speaks the protocol the matrix case serves.
    let c = d.client();
    run_standard_checks(&c, &d).await;
    let base = d.url("bookmarks");
    create_read_delete(&c, &base).await;
    a_url_is_bookmarked_once_per_user(&c, &base).await;
    lists_filter_on_user_and_archived_and_page(&c, &base).await;
    archiving_is_conditional_and_racing_archives_have_one_winner(&c, &base).await;
    every_rule_is_a_422_naming_its_field(&c, &base).await;
}

brigade_launch::conformance_matrix!(bookmarks::services(), suite);

/// A user name no other check (of this or another run on a shared database) uses.
fn fresh_user(what: &str) -> String {
    format!("{what}-{}", &brigade_kit::store::new_id()[16..])
}

async fn new_bookmark(c: &TestClient, base: &str, user: &str, n: u32) -> Value {
    c.post(
        &format!("{base}/bookmarks"),
        json!({"user": user, "url": format!("https://example.org/{n}"), "title": format!("Page {n}")}),
    )
    .await
    .expect(201, "create")
    .json
}

async fn create_read_delete(c: &TestClient, base: &str) {
    let user = fresh_user("crud");
    let created = c
        .post(
            &format!("{base}/bookmarks"),
            json!({"user": user, "url": "https://www.rust-lang.org/", "title": "Rust", "tags": ["rust", "lang"]}),
        )
        .await
        .expect(201, "create");
    let id = created.json["id"].as_str().expect("an id").to_string();
    assert_eq!(
        created.json,
        json!({"id": id, "user": user, "url": "https://www.rust-lang.org/", "title": "Rust",
               "tags": ["rust", "lang"], "archived": false})
    );
    let url = format!("{base}/bookmarks/{id}");
    assert_eq!(c.get(&url).await.expect(200, "get").json, created.json);
    c.delete(&url).await.expect(204, "delete");
    c.get(&url)
        .await
        .expect_error(404, "not_found", "get deleted");
    c.delete(&url)
        .await
        .expect_error(404, "not_found", "delete twice");
    c.post_empty(&format!("{url}/archive"))
        .await
        .expect_error(404, "not_found", "archive deleted");
}

async fn a_url_is_bookmarked_once_per_user(c: &TestClient, base: &str) {
    let (ana, bo) = (fresh_user("ana"), fresh_user("bo"));
    let first = new_bookmark(c, base, &ana, 1).await;
    let again = c
        .post(
            &format!("{base}/bookmarks"),
            json!({"user": ana, "url": "https://example.org/1", "title": "Again"}),
        )
        .await
        .expect_error(409, "conflict", "the same URL twice");
    assert!(again.message().contains("already"), "{}", again.json);
    new_bookmark(c, base, &bo, 1).await; // another user may
                                         // Once deleted, the URL is free again.
    let id = first["id"].as_str().unwrap();
    c.delete(&format!("{base}/bookmarks/{id}"))
        .await
        .expect(204, "delete");
    new_bookmark(c, base, &ana, 1).await;
}

async fn lists_filter_on_user_and_archived_and_page(c: &TestClient, base: &str) {
    let (user, other) = (fresh_user("lister"), fresh_user("other"));
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(new_bookmark(c, base, &user, n).await["id"].clone());
    }
    new_bookmark(c, base, &other, 0).await;
    for id in &ids[..2] {
        let id = id.as_str().unwrap();
        c.post_empty(&format!("{base}/bookmarks/{id}/archive"))
            .await
            .expect(200, "archive");
    }
    let mine = c
        .get(&format!("{base}/bookmarks?user={user}"))
        .await
        .expect(200, "by user");
    assert_eq!(mine.json["total"], 5);
    let listed: Vec<Value> = mine.json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].clone())
        .collect();
    assert_eq!(listed, ids, "in creation order");
    assert!(mine.json["items"][0].get("user_url").is_none());
    let open = c
        .get(&format!("{base}/bookmarks?user={user}&archived=false"))
        .await
        .expect(200, "by user, not archived");
    assert_eq!(open.json["total"], 3);
    assert!(open.json["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["archived"] == false && b["user"] == json!(user)));
    let page = c
        .get(&format!("{base}/bookmarks?user={user}&limit=2&offset=3"))
        .await
        .expect(200, "a page");
    assert_eq!(page.json["total"], 5);
    assert_eq!(page.json["items"].as_array().unwrap().len(), 2);
    assert_eq!(page.json["items"][0]["id"], ids[3]);
    let archived = c
        .get(&format!("{base}/bookmarks?archived=true&limit=500"))
        .await
        .expect(200, "archived, every user");
    assert!(archived.json["total"].as_u64().unwrap() >= 2);
    c.get(&format!("{base}/bookmarks?limit=501"))
        .await
        .expect_error(422, "unprocessable", "limit over 500");
    c.get(&format!("{base}/bookmarks?archived=maybe"))
        .await
        .expect_error(400, "bad_request", "archived not a boolean");
    c.get(&format!("{base}/bookmarks?user=a%20b"))
        .await
        .expect_error(400, "bad_request", "user not a user name");
}

async fn archiving_is_conditional_and_racing_archives_have_one_winner(c: &TestClient, base: &str) {
    let user = fresh_user("archiver");
    let b = new_bookmark(c, base, &user, 1).await;
    let archive = format!("{base}/bookmarks/{}/archive", b["id"].as_str().unwrap());
    let done = c.post_empty(&archive).await.expect(200, "archive");
    assert_eq!(done.json["archived"], true);
    assert_eq!(done.json["title"], b["title"]);
    c.post_empty(&archive)
        .await
        .expect_error(409, "conflict", "archive twice");
    let raced = new_bookmark(c, base, &user, 2).await;
    let archive = format!("{base}/bookmarks/{}/archive", raced["id"].as_str().unwrap());
    exactly_one_wins(c, &archive, json!({}), 20).await;
}

async fn every_rule_is_a_422_naming_its_field(c: &TestClient, base: &str) {
    let url = format!("{base}/bookmarks");
    let long_title = "x".repeat(201);
    let many_tags: Vec<String> = (0..11).map(|i| format!("t{i}")).collect();
    for (body, field) in [
        (
            json!({"user": "a b", "url": "http://x", "title": "A"}),
            "user",
        ),
        (json!({"url": "http://x", "title": "A"}), "user"),
        (json!({"user": "a", "url": "mailto:x", "title": "A"}), "url"),
        (
            json!({"user": "a", "url": "http://x", "title": " "}),
            "title",
        ),
        (
            json!({"user": "a", "url": "http://x", "title": long_title}),
            "title",
        ),
        (
            json!({"user": "a", "url": "http://x", "title": "A", "tags": ["UP"]}),
            "tags",
        ),
        (
            json!({"user": "a", "url": "http://x", "title": "A", "tags": many_tags}),
            "tags",
        ),
        (
            json!({"user": "a", "url": "http://x", "title": "A", "stars": 5}),
            "stars",
        ),
    ] {
        let a =
            c.post(&url, body.clone())
                .await
                .expect_error(422, "unprocessable", &body.to_string());
        assert!(
            a.message().starts_with(field) || a.message().contains(&format!("`{field}`")),
            "{body}: {}",
            a.json
        );
    }
}
