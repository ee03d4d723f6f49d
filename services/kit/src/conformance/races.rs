//! Races settled by the store: many copies of one conditional request at once, exactly one winner.

use serde_json::Value;

use super::TestClient;

/// Sends `n` copies of one JSON POST at once: exactly one must answer 200, every other 409.
pub async fn exactly_one_wins(c: &TestClient, url: &str, body: Value, n: usize) {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (c, url, body) = (c.clone(), url.to_string(), body.clone());
            tokio::spawn(async move { c.post(&url, body).await.status })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.expect("a racing request"));
    }
    let wins = statuses.iter().filter(|&&s| s == 200).count();
    assert_eq!(wins, 1, "{url}: {statuses:?}");
    assert!(
        statuses.iter().all(|&s| s == 200 || s == 409),
        "{url}: {statuses:?}"
    );
}
