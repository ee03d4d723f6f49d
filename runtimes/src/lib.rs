//! Thin adapters that serve any Brigade application ([`AppHandle`]) on a real HTTP runtime.
//!
//! Each adapter mounts the application's endpoints through its runtime's own router and body
//! extraction. The router matches once: the adapter hands the matched route's index and a raw
//! request ([`brigade_kit::RawRequest`]: the path as it came, query, headers the kit reads, body)
//! to [`AppHandle::call`], which takes the path parameters by position and returns the reply; what
//! the router does not take goes to [`AppHandle::unmatched`], told which endpoint matched when one
//! did, the one place a 404 or 405 comes from. The [`Reply`](brigade_kit::Reply) becomes the
//! runtime's response in one function. An adapter knows no route: adding a route never touches
//! one. Adding a runtime is one module here (`src/<name>.rs`, or a folder `src/<name>/mod.rs`)
//! and one feature line in `Cargo.toml`: `build.rs` derives [`RUNTIMES`] from the two.
//!
//! The house rules ([`brigade_kit::rules`]) run once per request on every runtime: before routing
//! on the runtimes on the `http` 1 types (the hyper-based ones and xitca-web), through one
//! function (`house::admit`); inside the handler the router chose on actix-web and ntex, whose
//! types are their own (`house_rules!`).
//!
//! Modules by job: `runtime` (the registry's [`Runtime`] and how it serves), `server` (listeners,
//! mounts, shutdown and drain), `memory` (in-memory connections for fuzzing), [`control`] (each
//! runtime's own minimal server, no kit layer: the conformance study's control), `house` and `head`
//! (the glue every adapter shares), `dispatch` (the router of runtimes without one), `hyper_loop`
//! and `quic` (the serving loop of the hyper-based runtimes and HTTP/3's endpoint), then one module
//! per runtime.
//!
//! Threading is the same everywhere: each mounted service gets `workers` worker threads (default: the
//! cores this process may use). axum, hyper, warp, salvo and poem run on one multi-threaded tokio
//! runtime with `workers` workers per service; actix-web, ntex and xitca-web (and their io_uring
//! variants) run `workers` single-threaded workers per service (their own model). Listeners are
//! bound the same way for all ([`bind`]): `SO_REUSEADDR`, backlog 1024, `TCP_NODELAY` (inherited
//! by accepted sockets on Linux).
//!
//! Limits are the same for all ([`ServerLimits`], from the kit): every adapter serves the protocols
//! the limits name (HTTP/1.1 by default; h2c, both, or TLS with ALPN `h2, http/1.1` when asked) and
//! applies the kit's head, body, timeout, connection and HTTP/2 limits; axum, hyper, warp, salvo
//! and poem share one loop on hyper's own builders and one tokio-rustls acceptor (`hyper_loop`),
//! actix-web, ntex and xitca-web set their own knobs from the same values and take the same rustls
//! configuration ([`brigade_kit::tls`]). Every runtime answers `HEAD` for every `GET` route,
//! without the body. HTTP/3 (`--protocol h3`) stands on one QUIC endpoint (`quic`): the
//! hyper-based runtimes serve it through the shared loop's h3 (`hyper_loop::quic`), xitca-web
//! through xitca-http's own h3 dispatcher (`xitca::h3`); the others refuse it at start.

// The macros first: the modules after them use them.
#[macro_use]
mod head;
#[macro_use]
mod house;

pub mod control;
mod dispatch;
pub mod hello;
#[cfg(feature = "hyper-loop")]
mod hyper_loop;
#[cfg(any(feature = "actix", feature = "xitca"))]
mod idle;
pub mod inprocess;
mod memory;
#[cfg(any(feature = "hyper-loop", feature = "xitca"))]
mod quic;
mod runtime;
mod server;

pub use memory::MemoryServer;
pub use runtime::{Runtime, H3_NOT_OFFERED, TOKIO_EPOLL};
#[cfg(feature = "hyper-loop")]
pub(crate) use server::run_on_tokio;
pub use server::{
    available_cores, bind, shutdown_channel, Listener, Mount, Shutdown, ShutdownTrigger, TlsConfig,
    DRAIN, GRACE,
};
#[allow(unused_imports)] // a build with none of the runtimes that use them
pub(crate) use server::{drain, drain_listener};

include!(concat!(env!("OUT_DIR"), "/registry.rs"));
runtime_modules!();

/// The version `Cargo.lock` resolved for `krate`, one of this crate's dependencies.
pub fn locked_version(krate: &str) -> Option<&'static str> {
    LOCKED.iter().find(|(n, _)| *n == krate).map(|(_, v)| *v)
}

/// The compiled-in runtime called `name`.
pub fn find(name: &str) -> Option<&'static Runtime> {
    RUNTIMES.iter().find(|r| r.name == name)
}

/// The names of the compiled-in runtimes.
pub fn names() -> Vec<&'static str> {
    RUNTIMES.iter().map(|r| r.name).collect()
}
