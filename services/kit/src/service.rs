//! What a service is to whoever serves or tests it: a name, a default port, a database with its
//! collections, the peers it calls, how its application is built from an opened store, its peers and
//! the runtime's name, and, optionally, the realistic documents `--preload` fills it with.
//!
//! The restaurant's three services implement [`Service`], and so does any user's service; the
//! serve entry point (`brigade-launch`) turns a list of them into `serve --runtime ... --store ...`,
//! and its test harness into a deployment on every runtime and store. [`build`] is the one place a
//! service's store is opened and its application bound to it, for both.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::observe::{MeteredStore, Metrics};
use crate::peer::PeerTransport;
use crate::peer::{PeerClient, PeerTimeouts};
use crate::preload::Preload;
use crate::store::{self, CollectionSpec, Store, StoreConfig, StoreError, StoreKind};
use crate::AppHandle;

/// What a service's application is built from.
pub struct Parts {
    /// The runtime serving it, for `/health`.
    pub runtime: String,
    /// Its store, opened with its collections.
    pub store: Arc<dyn Store>,
    /// Its peers, by name.
    pub peers: PeerClient,
}

impl fmt::Debug for Parts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parts")
            .field("runtime", &self.runtime)
            .field("store", &self.store.kind())
            .field("peers", &self.peers)
            .finish()
    }
}

/// A service built on the kit, as a server or a test harness needs to know it.
pub trait Service: Send + Sync + 'static {
    /// Its name: `--service NAME`, the `listening` line, `/health`, the peer name others call it by.
    fn name(&self) -> &str;
    /// The port it listens on when not told otherwise.
    fn default_port(&self) -> u16;
    /// Its database in the store (one per service; `--database-prefix` is put in front). Default:
    /// its name.
    fn database(&self) -> String {
        self.name().to_string()
    }
    /// Its collections and the fields the store must keep unique or indexed.
    fn collections(&self) -> &[CollectionSpec];
    /// The names of the services it calls. Default: none.
    fn peers(&self) -> Vec<&str> {
        Vec::new()
    }
    /// Binds its route table to a state made of `parts`.
    fn app(&self, parts: Parts) -> Arc<dyn AppHandle>;
    /// The realistic documents `--preload N` fills its empty collections with; `None` (the
    /// default) refuses `--preload`.
    fn preload(&self) -> Option<&dyn Preload> {
        None
    }
}

impl fmt::Debug for dyn Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Service({})", self.name())
    }
}

/// How to build a service: the runtime's name, the store and where it lives, the peers' URLs.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// The runtime's name, for `/health`.
    pub runtime: String,
    /// Which store backend.
    pub store: StoreKind,
    /// Where the store lives.
    pub store_config: StoreConfig,
    /// Prepended to each service's database name, so runs and tests can each have their own.
    pub database_prefix: String,
    /// Peer base URLs by service name. A peer missing here is not configured: calling it answers 500.
    pub peers: HashMap<String, String>,
    /// Timeouts for peer calls.
    pub peer_timeouts: PeerTimeouts,
    /// How peers are spoken to: TLS for `https://` ones, HTTP/2 or HTTP/1.1.
    pub peer_transport: PeerTransport,
    /// Whether the service records metrics and serves them on `/metrics` (`--no-metrics` turns
    /// them off: no timing, no counting, `/metrics` answers 404).
    pub metrics: bool,
}

impl ServiceConfig {
    /// The database `service` uses under this configuration: the prefix, then its own name.
    pub fn database(&self, service: &dyn Service) -> String {
        format!("{}{}", self.database_prefix, service.database())
    }
}

/// A built service: what an adapter serves, and the store to close at shutdown.
pub struct Built {
    /// The service's name.
    pub name: String,
    /// The application to mount.
    pub app: Arc<dyn AppHandle>,
    /// Its store.
    pub store: Arc<dyn Store>,
}

impl fmt::Debug for Built {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Built({})", self.name)
    }
}

/// Opens the service's store (its database, with its collections) and binds its application to it
/// and to the peers it calls; with metrics on, the store, the peer client and the application all
/// record into one [`Metrics`], which the application serves on `/metrics`.
pub async fn build(service: &dyn Service, config: &ServiceConfig) -> Result<Built, StoreError> {
    let mut store = store::open(
        config.store,
        &config.database(service),
        service.collections(),
        &config.store_config,
    )
    .await?;
    let peers = service
        .peers()
        .into_iter()
        .filter_map(|p| config.peers.get(p).map(|url| (p.to_string(), url.clone())))
        .collect();
    let mut peers = PeerClient::over(peers, config.peer_timeouts, &config.peer_transport);
    let metrics = config.metrics.then(|| {
        let collections: Vec<&'static str> = service.collections().iter().map(|c| c.name).collect();
        Arc::new(Metrics::new(&collections, &service.peers()))
    });
    if let Some(m) = &metrics {
        store = Arc::new(MeteredStore::new(store, m.clone()));
        peers = peers.with_metrics(m.clone());
    }
    let app = service.app(Parts {
        runtime: config.runtime.clone(),
        store: store.clone(),
        peers,
    });
    if let Some(m) = metrics {
        app.observe(m);
    }
    Ok(Built {
        name: service.name().to_string(),
        app,
        store,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::{self, ServiceInfo};
    use crate::{App, Reply, RouteTable};

    struct Notes;

    struct State {
        parts: Parts,
    }

    impl ServiceInfo for State {
        fn service(&self) -> &str {
            "notes"
        }
        fn runtime(&self) -> &str {
            &self.parts.runtime
        }
        fn store(&self) -> &dyn Store {
            self.parts.store.as_ref()
        }
    }

    const NOTES: CollectionSpec = CollectionSpec {
        name: "notes",
        unique: &[],
        indexed: &[],
    };

    impl Service for Notes {
        fn name(&self) -> &str {
            "notes"
        }
        fn default_port(&self) -> u16 {
            9000
        }
        fn collections(&self) -> &[CollectionSpec] {
            &[NOTES]
        }
        fn peers(&self) -> Vec<&str> {
            vec!["clock", "mail"]
        }
        fn app(&self, parts: Parts) -> Arc<dyn AppHandle> {
            let table = RouteTable::new()
                .get("/peers", |s: Arc<State>, _| async move {
                    Ok(Reply::ok(&[
                        s.parts.peers.base("clock"),
                        s.parts.peers.base("mail"),
                    ]))
                })
                .merge(standard::routes());
            Arc::new(App::new("notes", table, Arc::new(State { parts })))
        }
    }

    #[tokio::test]
    async fn build_opens_the_prefixed_database_and_passes_only_the_peers_it_calls() {
        let config = ServiceConfig {
            runtime: "test".into(),
            store: StoreKind::Memory,
            store_config: StoreConfig::default(),
            database_prefix: "t1_".into(),
            peers: HashMap::from([
                ("clock".to_string(), "http://127.0.0.1:1".to_string()),
                ("other".to_string(), "http://127.0.0.1:2".to_string()),
            ]),
            peer_timeouts: PeerTimeouts::default(),
            metrics: true,
            peer_transport: Default::default(),
        };
        assert_eq!(config.database(&Notes), "t1_notes");
        let built = build(&Notes, &config).await.unwrap();
        assert_eq!(
            (built.name.as_str(), built.store.kind()),
            ("notes", "memory")
        );
        let route = built
            .app
            .routes()
            .iter()
            .position(|r| r.path == "/peers")
            .unwrap();
        let request = crate::RawRequest {
            path: "/peers".into(),
            ..Default::default()
        };
        let reply = built.app.call(route, request).await;
        let peers: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(peers, serde_json::json!(["http://127.0.0.1:1", null]));
        assert!(Notes.preload().is_none());
    }
}
