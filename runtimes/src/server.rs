//! What serving takes on every runtime: a bound listener ([`bind`]) with TLS or not, the mounts,
//! the shutdown signal, the drain and the grace after it, and the tokio runtime the hyper-based
//! adapters share.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use brigade_kit::AppHandle;

/// How long in-flight requests may run after a shutdown begins.
pub const GRACE: Duration = Duration::from_secs(10);

/// How long a draining server keeps its connections open after it stops accepting, answering
/// each request with `Connection: close`, before it shuts those left (docs/reliability.md).
pub const DRAIN: Duration = Duration::from_secs(2);

/// Waits until `open()` (the connections still open) is 0, or [`DRAIN`] has passed (on any
/// tokio-based runtime: all of them).
#[allow(dead_code)] // a build with no runtime feature has no server to drain
pub(crate) async fn drain(open: impl Fn() -> usize) {
    let until = tokio::time::Instant::now() + DRAIN;
    while open() > 0 && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The drain of a runtime whose own stop only stops accepting (actix-web, ntex, xitca-web), once
/// `shutdown` fires (docs/reliability.md): the listening socket (a second handle on it) stops
/// completing handshakes at once, `draining` is set so that every answer from then on closes its
/// connection, and [`drain`] waits on `open()`; the runtime then stops what is left within its grace.
/// Whether a connection is still open once the drain ends: with none, no stop has anything left
/// to wait for (no new one can come, the listening socket being shut).
#[allow(dead_code)] // a build with none of those runtimes has no listener to drain this way
pub(crate) async fn drain_listener(
    shutdown: Shutdown,
    listening: std::net::TcpListener,
    draining: Arc<std::sync::atomic::AtomicBool>,
    open: impl Fn() -> usize,
) -> bool {
    shutdown.wait().await;
    let _ = socket2::SockRef::from(&listening).shutdown(std::net::Shutdown::Read);
    draining.store(true, std::sync::atomic::Ordering::Relaxed);
    drain(&open).await;
    open() > 0
}

/// A server's TLS configuration (the kit's, [`brigade_kit::tls::TlsSettings::load`]).
pub type TlsConfig = Arc<rustls::ServerConfig>;

/// Where a server accepts connections: a bound socket, and TLS on it or not.
pub struct Listener {
    /// The socket, already bound (see [`bind`]).
    pub socket: std::net::TcpListener,
    /// TLS on every connection, or plaintext.
    pub tls: Option<TlsConfig>,
}

impl From<std::net::TcpListener> for Listener {
    /// A plaintext listener.
    fn from(socket: std::net::TcpListener) -> Listener {
        Listener { socket, tls: None }
    }
}

/// A service to serve: its bound listener and the application.
pub struct Mount {
    /// The listener, already bound (see [`bind`]).
    pub listener: Listener,
    /// The application.
    pub app: Arc<dyn AppHandle>,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Mount({} on {:?})",
            self.app.name(),
            self.listener.socket.local_addr().ok()
        )
    }
}

/// Resolves when the server should stop accepting and drain. Cloneable; cheap.
#[derive(Debug, Clone)]
pub struct Shutdown(tokio::sync::watch::Receiver<bool>);

/// Starts a shutdown for every [`Shutdown`] made with it.
#[derive(Debug)]
pub struct ShutdownTrigger(tokio::sync::watch::Sender<bool>);

/// A trigger and the signal it fires.
pub fn shutdown_channel() -> (ShutdownTrigger, Shutdown) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    (ShutdownTrigger(tx), Shutdown(rx))
}

impl ShutdownTrigger {
    /// Begins the shutdown.
    pub fn fire(&self) {
        let _ = self.0.send(true);
    }
}

impl Shutdown {
    /// Whether the shutdown has begun.
    pub fn begun(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until the shutdown begins (or its trigger is dropped).
    pub async fn wait(mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

/// How many cores this process may run on.
pub fn available_cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Binds a listener the same way for every runtime: `SO_REUSEADDR`, `TCP_NODELAY`, backlog 1024.
pub fn bind(addr: SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_nodelay(true)?;
    socket
        .bind(&addr.into())
        .with_context(|| format!("Failed to bind {addr}"))?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Runs `server` on a multi-threaded tokio runtime with `workers` workers, giving it at most
/// [`GRACE`] to drain once `shutdown` fires. Shared by the tokio-based adapters.
#[cfg(feature = "hyper-loop")]
pub(crate) fn run_on_tokio<F>(workers: usize, shutdown: Shutdown, server: F) -> anyhow::Result<()>
where
    F: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("brigade-worker")
        .enable_all()
        .build()?;
    rt.block_on(async move {
        tokio::select! {
            r = server => r,
            _ = async { shutdown.wait().await; tokio::time::sleep(GRACE).await } => {
                tracing::warn!("requests still running {GRACE:?} after shutdown; dropping them");
                Ok(())
            }
        }
    })
}
