//! The launcher: starts any set of services built on Brigade's kit on a chosen runtime and store.
//!
//! A service implements [`brigade_kit::Service`] (its name, default port, database, collections,
//! peers, how its application is built, its optional preload); a binary lists its services in a
//! [`Services`] and hands them to [`main`], which gives it the command line `brigade serve` has:
//!
//! - `serve` ([`ServeArgs`]): `--runtime`, `--service NAME|all`, `--listen`, `--workers`, `--store`,
//!   `--data-dir`, `--mongodb-uri`, `--store-timeout-ms`, `--store-concurrency`, `--store-writers`,
//!   `--peer`/`BRIGADE_PEERS`, `--peer-timeout-ms`, `--preload`, `--database-prefix`,
//!   `--drop-databases-on-exit`,
//!   `--no-metrics`, `--log-format text|json`, the server limits ([`LimitArgs`]:
//!   `--header-read-timeout`, `--max-connections`, ...); logging on stderr, the
//!   [`brigade_kit::announce`] lines on stdout once each service is bound,
//!   `/ready` from the kit's standard routes, and a graceful shutdown on SIGTERM or SIGINT (stop
//!   accepting, finish the requests in flight, close the stores, exit 0);
//! - `runtimes [--json]` ([`RuntimesArgs`]): the runtimes and stores compiled in and the services.
//!
//! The `brigade` binary is one user of it (the restaurant's three services, [`ServerCommand`]
//! flattened into its own commands); `examples/bookmarks` is another. It lives in its own crate
//! because it needs both the kit and the runtimes, and the runtimes depend on the kit.
//!
//! Parts: `args` ([`ServeArgs`]), `prepare` (binding, building, preloading, serving: [`Prepared`]),
//! `run` ([`serve`], signals, logging), `cli` ([`ServerCommand`], [`main`]), `databases` (dropping
//! throw-away MongoDB databases), and [`testing`] (feature `testing`: the in-process harness and
//! [`conformance_matrix!`]).

use std::sync::Arc;

use anyhow::bail;
use brigade_kit::Service;

mod args;
mod cli;
mod databases;
mod files;
mod prepare;
mod run;

#[cfg(feature = "testing")]
pub mod testing;

pub use args::{LimitArgs, LogFormat, ServeArgs};
pub use brigade_kit::announce;
pub use brigade_runtimes as runtimes;
pub use clap;
pub use cli::{main, runtimes_listing, RuntimesArgs, ServerCommand};
pub use databases::drop_databases;
pub use prepare::{bind, listen_addr, prepare, Bound, Prepared};
pub use run::{announce, init_logging, init_tracing, pick_runtime, serve, shutdown_signal};

/// The services a binary serves, in the order `--service all` binds them (consecutive ports).
#[derive(Clone, Default)]
pub struct Services {
    list: Vec<Arc<dyn Service>>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Services {
    /// No services yet.
    pub fn new() -> Services {
        Services::default()
    }

    /// Adds a service. Panics if one of that name was added before (a programming error).
    pub fn with(mut self, service: impl Service) -> Services {
        self.push(Arc::new(service));
        self
    }

    /// Adds a shared service. Panics if one of that name was added before.
    pub fn push(&mut self, service: Arc<dyn Service>) {
        assert!(
            self.find(service.name()).is_none(),
            "service {} added twice",
            service.name()
        );
        self.list.push(service);
    }

    /// The services' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.list.iter().map(|s| s.name()).collect()
    }

    /// The service called `name`.
    pub fn find(&self, name: &str) -> Option<&Arc<dyn Service>> {
        self.list.iter().find(|s| s.name() == name)
    }

    /// Every service, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Service>> {
        self.list.iter()
    }

    /// What `--service` names: every service for `all`, else the one of that name.
    pub fn select(&self, which: &str) -> anyhow::Result<Vec<Arc<dyn Service>>> {
        if which == "all" {
            return Ok(self.list.clone());
        }
        match self.find(which) {
            Some(s) => Ok(vec![s.clone()]),
            None => bail!(
                "unknown service {which:?}; expected {} or all",
                self.names().join(", ")
            ),
        }
    }
}

impl From<Vec<Arc<dyn Service>>> for Services {
    /// Panics if two services share a name.
    fn from(list: Vec<Arc<dyn Service>>) -> Services {
        let mut services = Services::new();
        for s in list {
            services.push(s);
        }
        services
    }
}

impl<S: Service> FromIterator<S> for Services {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Services {
        iter.into_iter().fold(Services::new(), Services::with)
    }
}
