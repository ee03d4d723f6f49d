//! The restaurant services — waiter, tables and kitchen — written once on Brigade's kit, exactly as a
//! user would write their own service: a route table per service over a shared state, validated
//! domain types, a store, and HTTP calls to peers. Nothing here knows which runtime serves it: each
//! [`ServiceName`] is a kit [`Service`], and [`services`] is what a server binary serves.

use std::fmt;
use std::sync::Arc;

use brigade_kit::peer::PeerClient;
use brigade_kit::preload::Preload;
use brigade_kit::service::Parts;
use brigade_kit::standard::{self, ServiceInfo};
use brigade_kit::store::{CollectionSpec, Store};
use brigade_kit::{App, AppHandle, RouteTable, Service};

pub mod kitchen;
pub mod model;
pub mod preload;
pub mod scenarios;
pub mod tables;
pub mod waiter;

#[cfg(feature = "conformance")]
pub mod conformance;

/// One of the three services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServiceName {
    /// Waiters; calls nobody.
    Waiter,
    /// Tables; asks waiter whether a waiter exists before seating.
    Tables,
    /// Orders; asks tables whether a table exists and is occupied.
    Kitchen,
}

impl ServiceName {
    /// All three, in dependency order.
    pub const ALL: [ServiceName; 3] = [
        ServiceName::Waiter,
        ServiceName::Tables,
        ServiceName::Kitchen,
    ];

    /// The service's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceName::Waiter => "waiter",
            ServiceName::Tables => "tables",
            ServiceName::Kitchen => "kitchen",
        }
    }

    /// Its default port (8081, 8082, 8083).
    pub fn default_port(self) -> u16 {
        match self {
            ServiceName::Waiter => 8081,
            ServiceName::Tables => 8082,
            ServiceName::Kitchen => 8083,
        }
    }

    /// Its database name in the store (one database per service).
    pub fn database(self) -> String {
        format!("brigade_{}", self.as_str())
    }

    /// The peers it calls.
    pub fn peers(self) -> &'static [ServiceName] {
        match self {
            ServiceName::Waiter => &[],
            ServiceName::Tables => &[ServiceName::Waiter],
            ServiceName::Kitchen => &[ServiceName::Tables],
        }
    }

    /// Its collections.
    pub fn collections(self) -> &'static [CollectionSpec] {
        match self {
            ServiceName::Waiter => std::slice::from_ref(&waiter::WAITERS),
            ServiceName::Tables => std::slice::from_ref(&tables::TABLES),
            ServiceName::Kitchen => std::slice::from_ref(&kitchen::ORDERS),
        }
    }

    /// Its routes, the standard ones included.
    pub fn routes(self) -> RouteTable<ServiceState> {
        let own = match self {
            ServiceName::Waiter => waiter::routes(),
            ServiceName::Tables => tables::routes(),
            ServiceName::Kitchen => kitchen::routes(),
        };
        own.merge(standard::routes())
    }
}

impl fmt::Display for ServiceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ServiceName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ServiceName::ALL
            .into_iter()
            .find(|n| n.as_str() == s)
            .ok_or_else(|| format!("unknown service {s:?}; expected waiter, tables or kitchen"))
    }
}

/// The state every handler of a service shares.
pub struct ServiceState {
    /// Which service this is.
    pub service: ServiceName,
    /// The runtime serving it, for `/health`.
    pub runtime: String,
    /// Its store.
    pub store: Arc<dyn Store>,
    /// Its peers.
    pub peers: PeerClient,
}

impl fmt::Debug for ServiceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceState")
            .field("service", &self.service)
            .field("runtime", &self.runtime)
            .field("store", &self.store.kind())
            .finish()
    }
}

impl ServiceInfo for ServiceState {
    fn service(&self) -> &str {
        self.service.as_str()
    }
    fn runtime(&self) -> &str {
        &self.runtime
    }
    fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }
}

impl Service for ServiceName {
    fn name(&self) -> &str {
        self.as_str()
    }

    fn default_port(&self) -> u16 {
        ServiceName::default_port(*self)
    }

    fn database(&self) -> String {
        ServiceName::database(*self)
    }

    fn collections(&self) -> &[CollectionSpec] {
        ServiceName::collections(*self)
    }

    fn peers(&self) -> Vec<&str> {
        ServiceName::peers(*self)
            .iter()
            .map(|p| p.as_str())
            .collect()
    }

    fn app(&self, parts: Parts) -> Arc<dyn AppHandle> {
        let state = Arc::new(ServiceState {
            service: *self,
            runtime: parts.runtime,
            store: parts.store,
            peers: parts.peers,
        });
        Arc::new(App::new(self.as_str(), self.routes(), state))
    }

    fn preload(&self) -> Option<&dyn Preload> {
        Some(&preload::RestaurantData)
    }
}

/// The three services as the serve entry point takes them, in dependency order (waiter, tables,
/// kitchen: `--service all` binds them on consecutive ports).
pub fn services() -> Vec<Arc<dyn Service>> {
    ServiceName::ALL
        .into_iter()
        .map(|s| Arc::new(s) as Arc<dyn Service>)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_service_route_table_builds_without_conflicts() {
        for name in ServiceName::ALL {
            let table = name.routes();
            assert!(
                table.routes().iter().any(|r| r.path == "/health"),
                "{name} lacks /health"
            );
            assert!(table
                .routes()
                .iter()
                .any(|r| r.path == "/bench/static/{size}"));
            // App::new panics on conflicting patterns.
            let store: Arc<dyn Store> = Arc::new(brigade_kit::store::memory::MemoryStore::new(
                name.collections(),
            ));
            let state = Arc::new(ServiceState {
                service: name,
                runtime: "test".into(),
                store,
                peers: PeerClient::new(Default::default(), Default::default()),
            });
            let app = App::new(name.as_str(), table, state);
            assert!(app.matcher().at("/health").is_ok());
        }
    }

    #[test]
    fn the_route_table_lists_the_designed_api() {
        let paths = |n: ServiceName| -> Vec<String> {
            n.routes()
                .routes()
                .iter()
                .map(|r| format!("{} {}", r.method, r.path))
                .collect()
        };
        let w = paths(ServiceName::Waiter);
        for want in [
            "POST /waiters",
            "GET /waiters",
            "GET /waiters/{id}",
            "PUT /waiters/{id}",
            "DELETE /waiters/{id}",
        ] {
            assert!(w.contains(&want.to_string()), "waiter lacks {want}");
        }
        let t = paths(ServiceName::Tables);
        for want in [
            "POST /tables",
            "GET /tables/{id}",
            "DELETE /tables/{id}",
            "POST /tables/{id}/seat",
            "POST /tables/{id}/release",
        ] {
            assert!(t.contains(&want.to_string()), "tables lacks {want}");
        }
        let k = paths(ServiceName::Kitchen);
        for want in [
            "POST /orders",
            "GET /orders",
            "POST /orders/{id}/items",
            "POST /orders/{id}/status",
            "DELETE /orders/{id}",
        ] {
            assert!(k.contains(&want.to_string()), "kitchen lacks {want}");
        }
    }
}
