//! The conformance suite (`brigade_services::conformance`) against every runtime × every store,
//! over real sockets, each combination on its own fresh deployment.
//!
//! MongoDB runs when `MONGODB_URI` is set or a Docker engine is reachable (a `mongo:7` container);
//! otherwise its tests say loudly why they skip, and fail under `BRIGADE_REQUIRE_MONGO=1`.

use std::collections::HashMap;
use std::time::Duration;

use brigade::launch;
use brigade_kit::peer::PeerTimeouts;
use brigade_kit::store::{StoreConfig, StoreKind};
use brigade_runtimes::ShutdownTrigger;
use brigade_services::conformance::{self, Deployment, Target};
use brigade_services::{ServiceConfig, ServiceName};

/// The three services on one runtime: waiter in its own server (so it can be stopped), tables and
/// kitchen together, each server on its own thread.
struct InProcess {
    runtime: &'static str,
    store: StoreKind,
    target: Target,
    waiter: Option<(ShutdownTrigger, std::thread::JoinHandle<anyhow::Result<()>>)>,
    rest: Option<(ShutdownTrigger, std::thread::JoinHandle<anyhow::Result<()>>)>,
    _dir: tempfile::TempDir,
}

fn spawn(
    prepared: launch::Prepared,
) -> (ShutdownTrigger, std::thread::JoinHandle<anyhow::Result<()>>) {
    let (trigger, shutdown) = brigade_runtimes::shutdown_channel();
    (trigger, std::thread::spawn(move || prepared.run(shutdown)))
}

impl InProcess {
    fn start(runtime: &str, store: StoreKind, mongodb_uri: Option<String>) -> InProcess {
        let rt = brigade_runtimes::find(runtime).expect("runtime compiled in");
        let dir = tempfile::tempdir().unwrap();
        let prefix = format!("t{}_", brigade_kit::store::new_id());
        let config = |peers: HashMap<String, String>| ServiceConfig {
            runtime: runtime.to_string(),
            store,
            store_config: StoreConfig {
                data_dir: dir.path().to_path_buf(),
                mongodb_uri: mongodb_uri.clone(),
                timeout: Duration::from_secs(5),
                cache_bytes: None,
            },
            database_prefix: prefix.clone(),
            peers,
            peer_timeouts: PeerTimeouts {
                connect: Duration::from_millis(500),
                request: Duration::from_secs(2),
            },
        };
        let any = Some("127.0.0.1:0".parse().unwrap());
        let waiter =
            launch::prepare(rt, &[ServiceName::Waiter], any, 2, config(HashMap::new())).unwrap();
        let waiter_url = format!("http://{}", waiter.addrs[0].1);
        let peers = HashMap::from([("waiter".to_string(), waiter_url.clone())]);
        let rest = launch::prepare(
            rt,
            &[ServiceName::Tables, ServiceName::Kitchen],
            any,
            2,
            config(peers),
        )
        .unwrap();
        let target = Target {
            waiter: waiter_url,
            tables: format!("http://{}", rest.addrs[0].1),
            kitchen: format!("http://{}", rest.addrs[1].1),
        };
        InProcess {
            runtime: rt.name,
            store,
            target,
            waiter: Some(spawn(waiter)),
            rest: Some(spawn(rest)),
            _dir: dir,
        }
    }
}

fn stop(server: &mut Option<(ShutdownTrigger, std::thread::JoinHandle<anyhow::Result<()>>)>) {
    if let Some((trigger, thread)) = server.take() {
        trigger.fire();
        thread
            .join()
            .expect("server thread")
            .expect("server stopped cleanly");
    }
}

impl Deployment for InProcess {
    fn target(&self) -> Target {
        self.target.clone()
    }
    fn runtime(&self) -> String {
        self.runtime.to_string()
    }
    fn store(&self) -> String {
        self.store.as_str().to_string()
    }
    fn stop_waiter(&mut self) {
        stop(&mut self.waiter);
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        stop(&mut self.waiter);
        stop(&mut self.rest);
    }
}

fn run(runtime: &str, store: StoreKind) {
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let uri = match store {
        StoreKind::Mongo => {
            match client_rt.block_on(brigade_kit::store::mongo::testing::mongo_uri()) {
                Some(uri) => Some(uri),
                None => return, // mongo_uri() said why, loudly, or panicked under BRIGADE_REQUIRE_MONGO=1
            }
        }
        _ => None,
    };
    let mut deployment = InProcess::start(runtime, store, uri);
    client_rt.block_on(conformance::run_suite(&mut deployment));
}

macro_rules! conformance_matrix {
    ($($runtime:ident: $feature:literal),*) => {
        $(
            #[cfg(feature = $feature)]
            mod $runtime {
                use super::*;
                #[test]
                fn passes_on_the_memory_store() {
                    run(stringify!($runtime), StoreKind::Memory);
                }
                #[test]
                fn passes_on_the_embedded_store() {
                    run(stringify!($runtime), StoreKind::Embedded);
                }
                #[test]
                fn passes_on_the_mongo_store() {
                    run(stringify!($runtime), StoreKind::Mongo);
                }
            }
        )*
    };
}

conformance_matrix!(axum: "axum", actix: "actix", hyper: "hyper", warp: "warp");
