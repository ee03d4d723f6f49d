//! Binding, building and serving a set of services on one runtime: listeners bound first (so every
//! service knows its peers' addresses), then each service's store opened and its application built
//! on a small support runtime that also carries the stores' background work, then served until a
//! shutdown, then the stores closed.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use anyhow::{bail, Context};
use brigade_kit::http::RouteSpec;
use brigade_kit::limits::ServerLimits;
use brigade_kit::preload::{self, Filled};
use brigade_kit::service::{self, ServiceConfig};
use brigade_kit::store::Store;
use brigade_kit::Service;
use brigade_runtimes::{Mount, Runtime, Shutdown};

use crate::Services;

/// The address service number `index` of a set listens on: `listen` with its port plus `index`
/// (port 0 stays 0: any free port), or 127.0.0.1 and the service's default port; an error when
/// the consecutive port would pass 65535.
pub fn listen_addr(
    listen: Option<SocketAddr>,
    index: usize,
    default_port: u16,
) -> anyhow::Result<SocketAddr> {
    Ok(match listen {
        Some(a) if a.port() == 0 => a,
        Some(a) => {
            let port = u16::try_from(index)
                .ok()
                .and_then(|i| a.port().checked_add(i))
                .with_context(|| {
                    format!(
                        "--listen {a}: the services take consecutive ports from it, and service \
                         number {} would need a port past 65535; give a lower port",
                        index + 1
                    )
                })?;
            SocketAddr::new(a.ip(), port)
        }
        None => SocketAddr::from(([127, 0, 0, 1], default_port)),
    })
}

/// The URL a client on this machine reaches `addr` by (an unspecified address becomes loopback).
/// `url` (an `http://` one) as `https://` when `tls`.
pub(crate) fn scheme_url(url: String, tls: bool) -> String {
    match url.strip_prefix("http://") {
        Some(rest) if tls => format!("https://{rest}"),
        _ => url,
    }
}

pub(crate) fn local_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        ip if !ip.is_unspecified() => ip,
        std::net::IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}

/// A service with its listener bound, not yet built.
#[derive(Debug)]
pub struct Bound {
    /// The service.
    pub service: Arc<dyn Service>,
    /// Its listener (see [`brigade_runtimes::bind`]).
    pub listener: TcpListener,
}

impl Bound {
    /// The address it listens on.
    pub fn addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Its base URL, for clients and peers on this machine.
    pub fn url(&self) -> anyhow::Result<String> {
        Ok(local_url(self.addr()?))
    }
}

/// Binds a listener for each of `services`, number `i` on [`listen_addr`]`(listen, i, ...)`.
pub fn bind(
    services: &[Arc<dyn Service>],
    listen: Option<SocketAddr>,
) -> anyhow::Result<Vec<Bound>> {
    services
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let addr = listen_addr(listen, i, s.default_port())?;
            let listener = brigade_runtimes::bind(addr)
                .with_context(|| format!("Failed to bind the {} service", s.name()))?;
            Ok(Bound {
                service: s.clone(),
                listener,
            })
        })
        .collect()
}

/// Services bound to their listeners and built, ready to serve.
pub struct Prepared {
    /// The runtime that will serve them.
    pub runtime: &'static Runtime,
    /// Worker threads per service.
    pub workers: usize,
    /// Each service's name and the address it listens on, in order.
    pub addrs: Vec<(String, SocketAddr)>,
    /// The limits every service is served under (the kit's defaults unless changed before
    /// [`Prepared::run`]).
    pub limits: ServerLimits,
    /// TLS on every service's listener (plaintext unless set before [`Prepared::run`]).
    pub tls: Option<brigade_runtimes::TlsConfig>,
    services: Vec<Arc<dyn Service>>,
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

/// Builds the `bound` services on `runtime`. Each service's peers are, in this order of precedence:
/// `config.peers` (`--peer`), a service bound in this set, or a service of `all` at 127.0.0.1 on
/// its default port; a peer that is none of these is an error.
pub fn prepare(
    runtime: &'static Runtime,
    all: &Services,
    bound: Vec<Bound>,
    workers: usize,
    mut config: ServiceConfig,
) -> anyhow::Result<Prepared> {
    let mut here: HashMap<String, String> = HashMap::new();
    let mut addrs = Vec::new();
    for b in &bound {
        // Services bound here are called as they serve: over TLS when the server is.
        let url = scheme_url(b.url()?, config.peer_transport.tls.is_some());
        here.insert(b.service.name().to_string(), url);
        addrs.push((b.service.name().to_string(), b.addr()?));
    }
    let mut peers = HashMap::new();
    for b in &bound {
        for p in b.service.peers() {
            let url = match (config.peers.get(p), here.get(p), all.find(p)) {
                (Some(url), _, _) | (None, Some(url), _) => url.clone(),
                (None, None, Some(s)) => format!("http://127.0.0.1:{}", s.default_port()),
                (None, None, None) => bail!(
                    "the {} service calls {p}, which is not one of this binary's services \
                     ({}); give its URL with --peer {p}=http://...",
                    b.service.name(),
                    all.names().join(", ")
                ),
            };
            peers.insert(p.to_string(), url);
        }
    }
    config.peers = peers;
    config.runtime = runtime.name.to_string();

    let support = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("brigade-support")
        .enable_all()
        .build()?;
    let mut services = Vec::new();
    let mut mounts = Vec::new();
    let mut stores = Vec::new();
    for b in bound {
        let built = support
            .block_on(service::build(b.service.as_ref(), &config))
            .with_context(|| {
                format!(
                    "Failed to open the {} service's {} store",
                    b.service.name(),
                    config.store
                )
            })?;
        stores.push(built.store);
        mounts.push(Mount {
            listener: b.listener.into(),
            app: built.app,
        });
        services.push(b.service);
    }
    Ok(Prepared {
        runtime,
        workers: workers.max(1),
        addrs,
        limits: ServerLimits::default(),
        tls: None,
        services,
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

    /// Each service's routes, in order.
    pub fn routes(&self) -> Vec<Vec<RouteSpec>> {
        self.mounts
            .iter()
            .map(|m| m.app.routes().to_vec())
            .collect()
    }

    /// Fills each service's empty collections with `count` realistic documents from its
    /// [`Service::preload`], in bulk; collections that hold documents already are left alone, so a
    /// restart on the same data does not double them. Returns what was done per service. A service
    /// without a preload source is an error.
    pub fn preload(&self, count: u64) -> anyhow::Result<Vec<(String, Vec<Filled>)>> {
        let mut done = Vec::new();
        for (service, store) in self.services.iter().zip(&self.stores) {
            let name = service.name();
            let Some(source) = service.preload() else {
                bail!("--preload: the {name} service has no documents to preload");
            };
            let filled = self
                .support
                .block_on(preload::fill(
                    store.as_ref(),
                    service.collections(),
                    source,
                    count,
                ))
                .with_context(|| format!("Failed to preload the {name} service's store"))?;
            done.push((name.to_string(), filled));
        }
        Ok(done)
    }

    /// Serves until `shutdown`, then closes the stores. Blocks.
    pub fn run(mut self, shutdown: Shutdown) -> anyhow::Result<()> {
        for m in &mut self.mounts {
            m.listener.tls = self.tls.clone();
        }
        let served =
            self.runtime
                .serve_with_limits(self.mounts, self.workers, &self.limits, shutdown);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_take_consecutive_ports_from_listen_or_their_own() {
        let l: SocketAddr = "0.0.0.0:9000".parse().unwrap();
        assert_eq!(
            listen_addr(Some(l), 2, 1).unwrap(),
            "0.0.0.0:9002".parse().unwrap()
        );
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert_eq!(listen_addr(Some(any), 2, 1).unwrap(), any);
        assert_eq!(
            listen_addr(None, 2, 8083).unwrap(),
            "127.0.0.1:8083".parse().unwrap()
        );
        // The last port: the first service takes it, the next would wrap.
        let last: SocketAddr = "127.0.0.1:65535".parse().unwrap();
        assert_eq!(listen_addr(Some(last), 0, 1).unwrap(), last);
        let err = listen_addr(Some(last), 1, 1).unwrap_err().to_string();
        assert!(err.contains("past 65535"), "{err}");
    }

    #[test]
    fn urls_reach_an_unspecified_address_on_loopback() {
        assert_eq!(
            local_url("0.0.0.0:80".parse().unwrap()),
            "http://127.0.0.1:80"
        );
        assert_eq!(local_url("[::]:80".parse().unwrap()), "http://[::1]:80");
        assert_eq!(
            local_url("10.1.2.3:8".parse().unwrap()),
            "http://10.1.2.3:8"
        );
    }
}
