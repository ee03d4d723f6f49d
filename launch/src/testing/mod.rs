//! The in-process test harness: any [`Services`] deployed on any compiled runtime and store, each
//! service in a server of its own on a free port (so one can be stopped while the others run), with
//! a fresh data folder and fresh database names; and [`run_case`] / [`conformance_matrix!`](crate::conformance_matrix), which
//! run a service's own black-box suite on every runtime × store, the way juniper's
//! `run_http_test_suite` runs against each integration and ripgrep's `rgtest!` under each backend.
//!
//! A suite is an `async fn(Deployment)`; it calls the kit's checks every service passes
//! ([`run_standard_checks`]) and its own. MongoDB cases use `MONGODB_URI`, else a `mongo:7`
//! container, else skip loudly (and fail under `BRIGADE_REQUIRE_MONGO=1`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use brigade_kit::http::RouteSpec;
use brigade_kit::limits::ServeProtocol;
use brigade_kit::limits::ServerLimits;
use brigade_kit::peer::{PeerTimeouts, PeerTransport};
use brigade_kit::service::ServiceConfig;
use brigade_kit::store::StoreConfig;
use brigade_runtimes::{Runtime, ShutdownTrigger};

pub use brigade_kit::conformance::{
    exactly_one_wins, run_standard_checks, Answer, Deployment as Target, TestClient, Wire,
};
pub use brigade_kit::for_each_store;
pub use brigade_kit::store::StoreKind;

use crate::{bind, prepare, Services};

mod matrix;

/// One service's server thread and the trigger that stops it.
type Server = (ShutdownTrigger, JoinHandle<anyhow::Result<()>>);

/// A running deployment of a set of services on one runtime and store. Cheap to clone: clones
/// share the servers, which stop when [`Deployment::shutdown`] is called or the last clone drops.
#[derive(Clone)]
pub struct Deployment {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Deployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deployment")
            .field("runtime", &self.inner.runtime.name)
            .field("store", &self.inner.store)
            .field("services", &self.inner.services)
            .finish()
    }
}

/// A service of the deployment as its suite sees it.
#[derive(Debug, Clone)]
struct Running {
    name: String,
    url: String,
    routes: Vec<RouteSpec>,
}

struct Inner {
    runtime: &'static Runtime,
    store: StoreKind,
    services: Vec<Running>,
    servers: Mutex<HashMap<String, Server>>,
    /// A client that speaks what the servers speak; taken when the deployment shuts down, so its
    /// pooled idle connections close before the servers drain (a server waits up to
    /// [`brigade_runtimes::DRAIN`] for connections still open).
    client: Mutex<Option<TestClient>>,
    /// The TLS client configuration that trusts the servers' certificate, on TLS.
    tls_client: Option<Arc<rustls::ClientConfig>>,
    drop: Option<(Services, ServiceConfig)>,
    _dir: tempfile::TempDir,
}

impl Deployment {
    /// Starts every service of `services` on `runtime` and `store` (`mongodb_uri` for `mongo`),
    /// each on a free port of 127.0.0.1 with two workers, its peers pointed at the others.
    pub fn start(
        services: &Services,
        runtime: &str,
        store: StoreKind,
        mongodb_uri: Option<String>,
    ) -> anyhow::Result<Deployment> {
        Deployment::start_with_limits(
            services,
            runtime,
            store,
            mongodb_uri,
            ServerLimits::default(),
        )
    }

    /// [`Deployment::start`] with every service under `limits` instead of the kit's defaults.
    pub fn start_with_limits(
        services: &Services,
        runtime: &str,
        store: StoreKind,
        mongodb_uri: Option<String>,
        limits: ServerLimits,
    ) -> anyhow::Result<Deployment> {
        Deployment::start_over(services, runtime, store, mongodb_uri, limits, Wire::H1)
    }

    /// [`Deployment::start_with_limits`], every service speaking `wire`: h2c by `--protocol h2c`,
    /// either TLS form on a self-signed certificate (ALPN chooses); its [`Target::client`] speaks
    /// the same and trusts that certificate, and the services call each other the same way.
    pub fn start_over(
        services: &Services,
        runtime: &str,
        store: StoreKind,
        mongodb_uri: Option<String>,
        mut limits: ServerLimits,
        wire: Wire,
    ) -> anyhow::Result<Deployment> {
        let settings = brigade_kit::tls::TlsSettings {
            self_signed: wire.tls(),
            ..Default::default()
        };
        match wire {
            Wire::H2c => limits.protocol = ServeProtocol::H2c,
            Wire::H3 => limits.protocol = ServeProtocol::H3,
            _ => {}
        }
        let limits = limits.under_tls(settings.mode());
        let tls = settings.load()?;
        let peer_transport = PeerTransport::of_server(&limits, tls.as_ref())?;
        let rt = brigade_runtimes::find(runtime)
            .with_context(|| format!("runtime {runtime} is not compiled in"))?;
        // A protocol the runtime does not offer (h3 on actix-web) is refused here, as
        // `brigade serve` refuses it, before anything is bound.
        rt.check_protocol(&limits)?;
        let dir = tempfile::tempdir()?;
        let all: Vec<_> = services.iter().cloned().collect();
        let any = Some("127.0.0.1:0".parse()?);
        let bound = bind(&all, any)?;
        let mut urls = HashMap::new();
        for b in &bound {
            let url = crate::prepare::scheme_url(b.url()?, wire.tls());
            urls.insert(b.service.name().to_string(), url);
        }
        let config = test_config(
            rt.name,
            store,
            dir.path(),
            mongodb_uri,
            &urls,
            peer_transport,
        );
        let mut running = Vec::new();
        let mut servers = HashMap::new();
        for b in bound {
            let name = b.service.name().to_string();
            let mut prepared = prepare(rt, services, vec![b], 2, config.clone())?;
            prepared.limits = limits;
            prepared.tls = tls.as_ref().map(|t| t.config.clone());
            let (trigger, shutdown) = brigade_runtimes::shutdown_channel();
            let routes = prepared_routes(&prepared);
            let thread = std::thread::Builder::new()
                .name(format!("deployment-{name}"))
                .spawn(move || prepared.run(shutdown))?;
            running.push(Running {
                url: urls[&name].clone(),
                name: name.clone(),
                routes,
            });
            servers.insert(name, (trigger, thread));
        }
        let tls_client = config.peer_transport.tls.clone();
        let client = TestClient::speaking(wire, tls_client.clone());
        let drop = (store == StoreKind::Mongo).then(|| (services.clone(), config));
        Ok(Deployment {
            inner: Arc::new(Inner {
                runtime: rt,
                store,
                services: running,
                servers: Mutex::new(servers),
                client: Mutex::new(Some(client)),
                tls_client,
                drop,
                _dir: dir,
            }),
        })
    }

    /// Stops every service still running, asserting that each stopped cleanly, and drops the
    /// deployment's MongoDB databases.
    pub fn shutdown(&self) {
        self.inner.release_client();
        // Every server is told at once: a caller's stop closes its peer connections, so the
        // services it calls need not wait out their drain for them.
        let servers: Vec<(String, Server)> = self
            .inner
            .servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        for (_, (trigger, _)) in &servers {
            trigger.fire();
        }
        for (service, (_, thread)) in servers {
            Self::joined(&service, thread);
        }
        if let Some((services, config)) = &self.inner.drop {
            let all: Vec<_> = services.iter().cloned().collect();
            if let Err(e) = crate::drop_databases(&all, config) {
                brigade_kit::store::mongo::testing::loud(&format!(
                    "could not drop a test deployment's databases: {e:#}"
                ));
            }
        }
    }

    /// A TLS client configuration that trusts the deployment's certificate (None on plaintext);
    /// it offers no ALPN protocol of its own.
    pub fn tls_client(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.inner.tls_client.clone()
    }

    fn running(&self, service: &str) -> &Running {
        self.inner
            .services
            .iter()
            .find(|s| s.name == service)
            .unwrap_or_else(|| panic!("the deployment runs no service {service:?}"))
    }

    fn stop_server(&self, service: &str) {
        let server = self
            .inner
            .servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(service);
        if let Some((trigger, thread)) = server {
            trigger.fire();
            Self::joined(service, thread);
        }
    }

    /// Waits for `service`'s server thread, asserting that it stopped cleanly.
    fn joined(service: &str, thread: JoinHandle<anyhow::Result<()>>) {
        thread
            .join()
            .unwrap_or_else(|_| panic!("the {service} server thread panicked"))
            .unwrap_or_else(|e| panic!("the {service} server did not stop cleanly: {e:#}"));
    }
}

/// Every service's configuration in a test deployment: its data under `data_dir`, a database
/// prefix of its own (for MongoDB), its peers at `urls`, short peer timeouts, metrics on.
fn test_config(
    runtime: &str,
    store: StoreKind,
    data_dir: &std::path::Path,
    mongodb_uri: Option<String>,
    urls: &HashMap<String, String>,
    peer_transport: PeerTransport,
) -> ServiceConfig {
    ServiceConfig {
        runtime: runtime.to_string(),
        store,
        store_config: StoreConfig {
            data_dir: data_dir.to_path_buf(),
            mongodb_uri,
            timeout: Duration::from_secs(5),
            cache_bytes: None,
            concurrency: 0,
            writers: 0,
        },
        database_prefix: format!("t{}_", &brigade_kit::store::new_id()[20..]),
        peers: urls.clone(),
        peer_timeouts: PeerTimeouts {
            connect: Duration::from_millis(500),
            request: Duration::from_secs(2),
        },
        metrics: true,
        peer_transport,
    }
}

/// The routes of the one service `prepared` serves.
fn prepared_routes(prepared: &crate::Prepared) -> Vec<RouteSpec> {
    prepared.routes().into_iter().next().unwrap_or_default()
}

impl Target for Deployment {
    fn services(&self) -> Vec<String> {
        self.inner.services.iter().map(|s| s.name.clone()).collect()
    }
    fn url(&self, service: &str) -> String {
        self.running(service).url.clone()
    }
    fn routes(&self, service: &str) -> Vec<RouteSpec> {
        self.running(service).routes.clone()
    }
    fn runtime(&self) -> String {
        self.inner.runtime.name.to_string()
    }
    fn store(&self) -> String {
        self.inner.store.as_str().to_string()
    }
    fn stop(&self, service: &str) {
        self.running(service);
        self.stop_server(service);
    }
    fn client(&self) -> TestClient {
        self.inner
            .client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .expect("the deployment is shut down")
    }
}

impl Inner {
    /// Drops the deployment's client: its idle connections close (the suite's clones are gone
    /// by then), and the servers need not wait for them.
    fn release_client(&self) {
        self.client.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.release_client();
        // A failed suite still stops its servers: fire every trigger, then wait for the threads.
        let servers: Vec<Server> = self
            .servers
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, s)| s)
            .collect();
        for (trigger, _) in &servers {
            trigger.fire();
        }
        for (_, thread) in servers {
            let _ = thread.join();
        }
    }
}

/// Runs `suite` on a fresh deployment of `services` on `runtime` and `store`, then shuts it down.
/// For `mongo`, finds a MongoDB first (see the module documentation) and returns early, having said
/// why loudly, if there is none.
pub fn run_case<F, Fut>(services: Services, runtime: &str, store: StoreKind, suite: F)
where
    F: FnOnce(Deployment) -> Fut,
    Fut: Future<Output = ()>,
{
    run_case_over(services, runtime, store, Wire::H1, suite)
}

/// [`run_case_over`] over HTTP/3 where `runtime` offers it; where it does not, checks that it
/// refuses to start with the reason ([`brigade_runtimes::H3_NOT_OFFERED`]) rather than serving
/// something else.
pub fn run_case_over_h3<F, Fut>(services: Services, runtime: &str, store: StoreKind, suite: F)
where
    F: FnOnce(Deployment) -> Fut,
    Fut: Future<Output = ()>,
{
    let rt = brigade_runtimes::find(runtime).expect("a compiled-in runtime");
    if rt.offers(ServeProtocol::H3) {
        return run_case_over(services, runtime, store, Wire::H3, suite);
    }
    let refused = Deployment::start_over(
        &services,
        runtime,
        store,
        None,
        ServerLimits::default(),
        Wire::H3,
    )
    .map(|_| ())
    .expect_err("a runtime without h3 refuses --protocol h3");
    assert!(
        format!("{refused:#}").contains(brigade_runtimes::H3_NOT_OFFERED),
        "{runtime} refuses h3 with the reason: {refused:#}"
    );
}

/// [`run_case`] with every service and the suite's client speaking `wire`.
pub fn run_case_over<F, Fut>(
    services: Services,
    runtime: &str,
    store: StoreKind,
    wire: Wire,
    suite: F,
) where
    F: FnOnce(Deployment) -> Fut,
    Fut: Future<Output = ()>,
{
    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a client runtime");
    let uri = match store {
        StoreKind::Mongo => {
            match client.block_on(brigade_kit::store::mongo::testing::mongo_uri()) {
                Some(uri) => Some(uri),
                None => return, // mongo_uri() said why, loudly, or panicked under BRIGADE_REQUIRE_MONGO=1
            }
        }
        _ => None,
    };
    let deployment = Deployment::start_over(
        &services,
        runtime,
        store,
        uri,
        ServerLimits::default(),
        wire,
    )
    .unwrap_or_else(|e| {
        panic!(
            "starting {services:?} on {runtime} with {store} over {}: {e:#}",
            wire.as_str()
        )
    });
    client.block_on(suite(deployment.clone()));
    deployment.shutdown();
}
