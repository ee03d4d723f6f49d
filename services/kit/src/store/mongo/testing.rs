//! Test helpers shared by every test that needs a MongoDB: discovery and per-test databases.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::OnceCell;

/// The image tests start when no `MONGODB_URI` is given and a Docker engine is reachable.
pub const MONGO_IMAGE_TAG: &str = "7";

/// Names another image to start instead of `mongo:7` (`name[:tag]`, e.g. the local FerretDB image
/// CI builds, `localhost/brigade-ferretdb:1.24.2`), started as a generic image that listens on
/// 27017 and is ready once [`WAIT_ENV`]'s line appears on its stderr.
pub const IMAGE_ENV: &str = "BRIGADE_MONGO_IMAGE";

/// The log line (on stderr) that says a [`IMAGE_ENV`] image is ready [default: [`DEFAULT_WAIT`]].
pub const WAIT_ENV: &str = "BRIGADE_MONGO_WAIT";

/// FerretDB's line once it listens; the MongoDB module waits for mongod's own instead.
pub const DEFAULT_WAIT: &str = "Listening on";

/// The image the tests start when no `MONGODB_URI` is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestImage {
    /// `mongo:7` through testcontainers' MongoDB module (its own wait for mongod's log line).
    Mongo,
    /// Any MongoDB-compatible image listening on 27017, ready at a log line on stderr.
    Generic {
        /// The image's name.
        name: String,
        /// Its tag.
        tag: String,
        /// The stderr line to wait for.
        wait: String,
    },
}

impl TestImage {
    /// The image [`IMAGE_ENV`] and [`WAIT_ENV`] ask for, `mongo:7` unless told.
    pub fn from_env() -> TestImage {
        match std::env::var(IMAGE_ENV) {
            Ok(image) if !image.trim().is_empty() => TestImage::parse(
                image.trim(),
                &std::env::var(WAIT_ENV).unwrap_or_else(|_| DEFAULT_WAIT.to_owned()),
            ),
            _ => TestImage::Mongo,
        }
    }

    /// `name[:tag]` (a registry's port is not a tag), ready at `wait`.
    pub fn parse(image: &str, wait: &str) -> TestImage {
        let last_part = image.rsplit('/').next().unwrap_or(image);
        let (name, tag) = match last_part.rsplit_once(':') {
            Some((_, tag)) => (&image[..image.len() - tag.len() - 1], tag),
            None => (image, "latest"),
        };
        TestImage::Generic {
            name: name.to_owned(),
            tag: tag.to_owned(),
            wait: wait.to_owned(),
        }
    }

    /// `name:tag`, for messages.
    pub fn describe(&self) -> String {
        match self {
            TestImage::Mongo => format!("mongo:{MONGO_IMAGE_TAG}"),
            TestImage::Generic { name, tag, .. } => format!("{name}:{tag}"),
        }
    }
}

static DISCOVERED: OnceCell<Result<String, String>> = OnceCell::const_new();

/// A MongoDB connection string for tests, found once per process, in this order: `MONGODB_URI`
/// if set; else a `mongo:7` container (or [`IMAGE_ENV`]'s image) started with testcontainers on
/// the engine at `DOCKER_HOST` or Docker's socket (kept for the whole process);
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

pub use crate::skip::{loud, require_mongo};

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

/// Starts the test image ([`TestImage::from_env`]: `mongo:7` unless told) on a thread of its own
/// whose runtime outlives every test's runtime, and keeps the container there until the process
/// ends. The engine is the one testcontainers finds (`DOCKER_HOST`, e.g. podman's socket).
async fn start_container() -> Result<String, String> {
    let image = TestImage::from_env();
    let described = image.describe();
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
            rt.block_on(run_container(image, tx));
        })
        .map_err(|e| format!("cannot start the container thread: {e}"))?;
    let uri = rx
        .await
        .map_err(|_| "the container thread ended early".to_string())??;
    loud(&format!(
        "MongoDB tests use a {described} container at {uri}"
    ));
    Ok(uri)
}

/// Starts `image`, sends its URI (or why not), and keeps it until the process ends.
async fn run_container(image: TestImage, tx: tokio::sync::oneshot::Sender<Result<String, String>>) {
    use testcontainers_modules::mongo::Mongo;
    use testcontainers_modules::testcontainers::core::{IntoContainerPort, WaitFor};
    use testcontainers_modules::testcontainers::runners::AsyncRunner;
    use testcontainers_modules::testcontainers::{GenericImage, ImageExt};

    let no_engine = |e: &dyn std::fmt::Display| {
        format!(
            "no MONGODB_URI and no usable Docker engine for {} ({e})",
            image.describe()
        )
    };
    // A host port of our choosing rather than "publish all": podman's Docker API (4.x) leaves
    // published ports' host address empty, and testcontainers then finds no IPv4 mapping.
    let port = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(address) => address.port(),
        Err(e) => {
            let _ = tx.send(Err(format!("no free port for the container: {e}")));
            return;
        }
    };
    match &image {
        TestImage::Mongo => match Mongo::default()
            .with_tag(MONGO_IMAGE_TAG)
            .with_mapped_port(port, 27017.tcp())
            .start()
            .await
        {
            Ok(container) => keep(container, port, tx).await,
            Err(e) => {
                let _ = tx.send(Err(no_engine(&e)));
            }
        },
        TestImage::Generic { name, tag, wait } => {
            let generic = GenericImage::new(name.as_str(), tag.as_str())
                .with_exposed_port(27017.tcp())
                .with_wait_for(WaitFor::message_on_stderr(wait.as_str()))
                .with_mapped_port(port, 27017.tcp());
            match generic.start().await {
                Ok(container) => keep(container, port, tx).await,
                Err(e) => {
                    let _ = tx.send(Err(no_engine(&e)));
                }
            }
        }
    }
}

/// Sends the URI of `container` (published on the host's `port`) and keeps it (and this runtime)
/// for the rest of the process.
async fn keep<I: testcontainers_modules::testcontainers::Image>(
    container: testcontainers_modules::testcontainers::ContainerAsync<I>,
    port: u16,
    tx: tokio::sync::oneshot::Sender<Result<String, String>>,
) {
    let address = container
        .get_host()
        .await
        .map(|host| format!("mongodb://{host}:{port}/"))
        .map_err(|e| e.to_string());
    let _ = tx.send(address);
    std::future::pending::<()>().await;
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
    fn a_test_image_is_name_and_tag_and_a_registry_port_is_no_tag() {
        let wait = DEFAULT_WAIT;
        let generic = |name: &str, tag: &str| TestImage::Generic {
            name: name.to_owned(),
            tag: tag.to_owned(),
            wait: wait.to_owned(),
        };
        assert_eq!(
            TestImage::parse("localhost/brigade-ferretdb:1.24.2", wait),
            generic("localhost/brigade-ferretdb", "1.24.2")
        );
        assert_eq!(
            TestImage::parse("registry:5000/ferretdb", wait),
            generic("registry:5000/ferretdb", "latest")
        );
        assert_eq!(TestImage::Mongo.describe(), "mongo:7");
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
