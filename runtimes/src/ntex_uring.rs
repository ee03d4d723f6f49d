//! ntex on io_uring: the [ntex](crate::ntex) adapter, unchanged, with every worker's sockets on
//! ntex-net's io_uring driver (`neon-uring`) instead of tokio's epoll reactor. It answers "what
//! does io_uring change for this service" beside its tokio sibling (`compare --runtimes
//! ntex,ntex-uring`).
//!
//! Why not ntex's `neon-uring` feature: cargo unifies features, and with ntex's `tokio` feature on
//! for the sibling, ntex-net's `DefaultRuntime` picks tokio whatever else is on. So this module
//! builds its own [`Runner`] from the parts ntex-net exposes on Linux (its `uring::Reactor` and
//! `with_reactor`, ntex-rt's neon `Runtime`): the worker's futures run on the neon executor and
//! every socket ntex opens goes through the worker's ring. ntex's `tokio` feature also makes its
//! own task spawns tokio's `spawn_local`, so each worker's thread is inside a tokio `LocalSet` that
//! the neon executor polls (a `LocalSet` needs no tokio driver).
//!
//! The kit's own tokio needs — the store's blocking pool and deadlines, the peer calls a waiter
//! makes, the drain's timers — are served by one small tokio runtime per service (one worker
//! thread, entered on every ntex worker): those run on epoll, on that thread; the served
//! connections do not. `tests/suite/engines.rs` proves the ring carries the served connections
//! (its completion counter grows with the requests) and that the tokio sibling has no ring.
//!
//! Where io_uring is refused (a seccomp profile that blocks `io_uring_setup`, as container
//! runtimes' default profiles do, or `kernel.io_uring_disabled`), the server refuses to start and
//! says so.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use brigade_kit::limits::ServerLimits;
use ntex::rt::{BlockFuture, Reactor, Runner};

use crate::{Listener, Mount, Runtime, Shutdown};

/// The registry's entry.
pub(crate) const RUNTIME: Runtime = Runtime {
    name: "ntex-uring",
    crates: &["ntex"],
    threading: "ntex server, N single-threaded workers per service (the kit's timers, blocking \
                store calls and peer calls on one more thread)",
    engine: "io_uring (ntex-net's neon-uring driver, a ring per worker)",
    variant_of: Some("ntex"),
    h3: Err("ntex has no HTTP/3 server"),
    serve_one: serve,
    hello,
    control,
    memory: None,
};

/// Submission-queue entries per worker's ring (ntex-net's own `DefaultRuntime` uses 2048).
const RING_ENTRIES: u32 = 2048;

fn serve(
    mount: Mount,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    on_uring(|uring| crate::ntex::serve_on(uring, mount, workers, limits, shutdown))
}

fn hello(
    listener: Listener,
    workers: usize,
    limits: &ServerLimits,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    on_uring(|uring| crate::ntex::hello_on(uring, listener, workers, limits, shutdown))
}

/// The control server ([`crate::control`]): ntex's control ([`crate::ntex::control_on`]) on the
/// io_uring runner, its one worker's sockets on the ring (the kit's runtime beside it is idle).
fn control(c: crate::control::Control) -> anyhow::Result<()> {
    on_uring(|uring| crate::ntex::control_on(uring, c))
}

/// Runs `serve` with the io_uring runner, the kit's runtime alive until it returns.
fn on_uring(serve: impl FnOnce(Uring) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let kit = kit_runtime()?;
    let served = serve(Uring {
        kit: kit.handle().clone(),
    });
    kit.shutdown_background();
    served
}

/// The service's tokio runtime for the kit (one worker thread), once io_uring is known to work
/// here.
fn kit_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    if let Err(e) = ntex::rt::uring::Reactor::new(RING_ENTRIES) {
        anyhow::bail!(
            "ntex-uring needs io_uring, and this process may not set one up ({e}): a \
             container's default seccomp profile blocks io_uring_setup (docs/containers.md), as \
             does kernel.io_uring_disabled; run ntex instead"
        );
    }
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("brigade-ntex-uring-kit")
        .enable_all()
        .build()?)
}

/// ntex's runner on io_uring: each thread it runs gets its own ring, a neon executor, a tokio
/// `LocalSet` for ntex's spawns and the service's tokio runtime entered for the kit.
struct Uring {
    /// The kit's tokio runtime.
    kit: tokio::runtime::Handle,
}

impl Runner for Uring {
    fn block_on(&self, fut: BlockFuture) -> Result<(), Box<dyn Any + Send>> {
        let driver: Box<dyn Reactor> = match ntex::rt::uring::Reactor::new(RING_ENTRIES) {
            Ok(ring) => Box::new(ring),
            Err(e) => return Err(Box::new(format!("io_uring setup failed: {e}"))),
        };
        let _kit = self.kit.enter();
        ntex::rt::with_reactor(&driver, || {
            catch_unwind(AssertUnwindSafe(|| {
                let executor = ntex::rt::Runtime::new(driver.handle());
                // Entered for the whole thread, not only while `run_until` is polled: the
                // driver's completion handlers spawn too (under TLS).
                let local = tokio::task::LocalSet::new();
                let _spawns = local.enter();
                executor.block_on(local.run_until(fut), &*driver);
            }))
        })
    }
}
