//! Test helpers shared by every test that needs a MongoDB: discovery and per-test databases.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::OnceCell;

/// The image tests start when no `MONGODB_URI` is given and a Docker engine is reachable.
pub const MONGO_IMAGE_TAG: &str = "7";

static DISCOVERED: OnceCell<Result<String, String>> = OnceCell::const_new();

/// A MongoDB connection string for tests, found once per process, in this order: `MONGODB_URI`
/// if set; else a `mongo:7` container started with testcontainers (kept for the whole process);
/// else `None`, after one loud line on stderr saying why the MongoDB tests are skipped. With
/// `BRIGADE_REQUIRE_MONGO=1` (as in CI) that skip is a panic instead.
pub async fn mongo_uri() -> Option<String> {
    let found = DISCOVERED.get_or_init(discover).await;
    match found {
        Ok(uri) => Some(uri.clone()),
        Err(why) => {
            if require_mongo() {
                panic!("BRIGADE_REQUIRE_MONGO=1 but no MongoDB is available: {why}");
            }
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                loud(&format!(
                    "!!! SKIPPING MongoDB tests: {why} (set MONGODB_URI, e.g. \
                     `eval \"export $(bash scripts/ferretdb.sh start)\"`)"
                ))
            });
            None
        }
    }
}

/// Writes one line to the process's stderr directly: the test harness captures `eprintln!`
/// of passing tests, and a skip must be seen.
pub fn loud(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Whether `BRIGADE_REQUIRE_MONGO` asks for a failure instead of a skip.
pub fn require_mongo() -> bool {
    std::env::var("BRIGADE_REQUIRE_MONGO").is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// A database name no other test (of this or another process) uses: `<prefix>_<pid>_<n>_<random>`,
/// cut to MongoDB's 63-character limit.
pub fn unique_database(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let random = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let clean: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    format!("{clean}_{}_{n}_{random}", std::process::id())
}

/// `uri` with its database path set to `database` (query options kept), so that every service
/// opened with it uses that database.
pub fn with_database(uri: &str, database: &str) -> String {
    let (scheme, rest) = match uri.find("://") {
        Some(i) => uri.split_at(i + 3),
        None => ("", uri),
    };
    let (before_query, query) = match rest.find('?') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let hosts = before_query.split('/').next().unwrap_or(before_query);
    format!("{scheme}{hosts}/{database}{query}")
}

async fn discover() -> Result<String, String> {
    if let Ok(uri) = std::env::var("MONGODB_URI") {
        if !uri.trim().is_empty() {
            return Ok(uri);
        }
    }
    start_container().await
}

/// Starts `mongo:7` on a thread of its own whose runtime outlives every test's runtime, and keeps
/// the container there until the process ends.
async fn start_container() -> Result<String, String> {
    use testcontainers_modules::mongo::Mongo;
    use testcontainers_modules::testcontainers::runners::AsyncRunner;
    use testcontainers_modules::testcontainers::ImageExt;

    let (tx, rx) = tokio::sync::oneshot::channel::<Result<String, String>>();
    std::thread::Builder::new()
        .name("mongo-testcontainer".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(format!(
                        "cannot build a runtime for the container: {e}"
                    )));
                    return;
                }
            };
            rt.block_on(async move {
                let container = match Mongo::default().with_tag(MONGO_IMAGE_TAG).start().await {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = tx.send(Err(format!(
                            "no MONGODB_URI and no usable Docker engine ({e})"
                        )));
                        return;
                    }
                };
                let address = async {
                    let host = container.get_host().await.map_err(|e| e.to_string())?;
                    let port = container
                        .get_host_port_ipv4(27017)
                        .await
                        .map_err(|e| e.to_string())?;
                    Ok::<_, String>(format!("mongodb://{host}:{port}/"))
                }
                .await;
                let _ = tx.send(address);
                // Keep the container (and this runtime) for the rest of the process.
                std::future::pending::<()>().await;
            });
        })
        .map_err(|e| format!("cannot start the container thread: {e}"))?;
    let uri = rx
        .await
        .map_err(|_| "the container thread ended early".to_string())??;
    loud(&format!(
        "MongoDB tests use a mongo:{MONGO_IMAGE_TAG} container at {uri}"
    ));
    Ok(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_database_replaces_only_the_path() {
        assert_eq!(with_database("mongodb://h:1", "d"), "mongodb://h:1/d");
        assert_eq!(with_database("mongodb://h:1/", "d"), "mongodb://h:1/d");
        assert_eq!(
            with_database("mongodb://u:p@h:1,g:2/old?w=1", "d"),
            "mongodb://u:p@h:1,g:2/d?w=1"
        );
        assert_eq!(
            with_database("mongodb://h/?replicaSet=rs", "d"),
            "mongodb://h/d?replicaSet=rs"
        );
    }

    #[test]
    fn unique_databases_differ_and_are_valid_names() {
        let a = unique_database("brigade test.x");
        let b = unique_database("brigade test.x");
        assert_ne!(a, b);
        assert!(
            a.len() <= 63 && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{a}"
        );
    }
}
