//! Binds, builds and serves a set of services on one runtime: what `brigade serve` does, as a
//! library, so tests start exactly the same thing in-process.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use brigade_kit::preload::{self, Filled};
use brigade_kit::store::Store;
use brigade_runtimes::{Mount, Runtime, Shutdown};
use brigade_services::preload::RestaurantData;
use brigade_services::{ServiceConfig, ServiceName};

/// Services bound to their listeners and built, ready to serve.
pub struct Prepared {
    /// The runtime that will serve them.
    pub runtime: &'static Runtime,
    /// Worker threads per service.
    pub workers: usize,
    /// Each service and the address it listens on, in the order given.
    pub addrs: Vec<(ServiceName, SocketAddr)>,
    mounts: Vec<Mount>,
    stores: Vec<Arc<dyn Store>>,
    support: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("runtime", &self.runtime.name)
            .field("addrs", &self.addrs)
            .finish()
    }
}

/// The address service number `index` of a set listens on: `listen` with its port plus `index`
/// (port 0 stays 0: any free port), or 127.0.0.1 and the service's default port.
pub fn listen_addr(listen: Option<SocketAddr>, index: usize, service: ServiceName) -> SocketAddr {
    match listen {
        Some(a) if a.port() == 0 => a,
        Some(a) => SocketAddr::new(a.ip(), a.port() + index as u16),
        None => SocketAddr::from(([127, 0, 0, 1], service.default_port())),
    }
}

/// Binds a listener for each service, points peers inside the set at the bound ports (unless
/// `config.peers` names them), and builds each service (its store opened) on a small support
/// runtime that also carries the stores' background work.
pub fn prepare(
    runtime: &'static Runtime,
    services: &[ServiceName],
    listen: Option<SocketAddr>,
    workers: usize,
    mut config: ServiceConfig,
) -> anyhow::Result<Prepared> {
    let mut listeners = Vec::new();
    for (i, s) in services.iter().enumerate() {
        listeners.push((*s, brigade_runtimes::bind(listen_addr(listen, i, *s))?));
    }
    let mut peers: HashMap<String, String> = HashMap::new();
    let mut addrs = Vec::new();
    for (s, l) in &listeners {
        let addr = l.local_addr()?;
        let host = if addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            addr.ip().to_string()
        };
        peers.insert(
            s.as_str().to_string(),
            format!("http://{host}:{}", addr.port()),
        );
        addrs.push((*s, addr));
    }
    peers.extend(config.peers.drain());
    config.peers = peers;
    config.runtime = runtime.name.to_string();

    let support = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("brigade-support")
        .enable_all()
        .build()?;
    let mut mounts = Vec::new();
    let mut stores = Vec::new();
    for (name, listener) in listeners {
        let service = support
            .block_on(brigade_services::build(name, &config))
            .with_context(|| {
                format!("Failed to open the {name} service's {} store", config.store)
            })?;
        stores.push(service.store.clone());
        mounts.push(Mount {
            listener,
            app: service.app,
        });
    }
    Ok(Prepared {
        runtime,
        workers: workers.max(1),
        addrs,
        mounts,
        stores,
        support,
    })
}

impl Prepared {
    /// The support runtime (for spawning signal handlers and the like).
    pub fn support(&self) -> &tokio::runtime::Handle {
        self.support.handle()
    }

    /// Fills each service's empty collections with `count` realistic documents (the restaurant's
    /// [`RestaurantData`]), in bulk; collections that hold documents already are left alone, so a
    /// restart on the same data does not double them. Returns what was done per service.
    pub fn preload(&self, count: u64) -> anyhow::Result<Vec<(ServiceName, Vec<Filled>)>> {
        let mut done = Vec::new();
        for ((name, _), store) in self.addrs.iter().zip(&self.stores) {
            let filled = self
                .support
                .block_on(preload::fill(
                    store.as_ref(),
                    name.collections(),
                    &RestaurantData,
                    count,
                ))
                .with_context(|| format!("Failed to preload the {name} service's store"))?;
            done.push((*name, filled));
        }
        Ok(done)
    }

    /// Serves until `shutdown`, then closes the stores. Blocks.
    pub fn run(self, shutdown: Shutdown) -> anyhow::Result<()> {
        let served = self.runtime.serve(self.mounts, self.workers, shutdown);
        self.support.block_on(async {
            for s in &self.stores {
                if let Err(e) = s.close().await {
                    tracing::error!(error = %e, "closing a store");
                }
            }
        });
        served
    }
}

/// Drops the MongoDB databases of `services` (with `config`'s prefix): what `brigade serve
/// --drop-databases-on-exit` does after it stops, so a comparison that gives every run its own
/// databases leaves none behind. Does nothing for other stores.
pub fn drop_databases(services: &[ServiceName], config: &ServiceConfig) -> anyhow::Result<()> {
    #[cfg(feature = "mongo")]
    if config.store == brigade_kit::store::StoreKind::Mongo {
        use brigade_kit::store::mongo::MongoStore;
        let uri = config
            .store_config
            .mongodb_uri
            .as_deref()
            .context("--store mongo needs --mongodb-uri")?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        for name in services {
            let database = format!("{}{}", config.database_prefix, name.database());
            runtime
                .block_on(async {
                    let store =
                        MongoStore::connect(uri, &database, &[], config.store_config.timeout)
                            .await?;
                    // A URI that names its own database overrides ours: never drop that one.
                    if store.database_name() != database {
                        tracing::warn!(
                            uri_database = store.database_name(),
                            "the MongoDB URI names a database; not dropping it"
                        );
                        return Ok(());
                    }
                    store.drop_database().await
                })
                .with_context(|| format!("Failed to drop the database {database}"))?;
        }
    }
    let _ = (services, config);
    Ok(())
}
