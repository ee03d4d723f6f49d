//! A runtime's request path over in-memory connections ([`MemoryServer`]), for fuzzing it without
//! the kernel.

use std::sync::Arc;
use std::time::Duration;

use brigade_kit::limits::ServerLimits;
use brigade_kit::AppHandle;

/// How a runtime makes its [`MemoryServer`] for an application under limits.
pub(crate) type MakeMemoryServer = fn(Arc<dyn AppHandle>, &ServerLimits) -> MemoryServer;

/// A future that serves one in-memory connection.
pub(crate) type Serving = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A runtime's server over in-memory connections: the same protocol stack, house rules and
/// limits as on a socket, for fuzzing the request path without the kernel.
pub struct MemoryServer {
    pub(crate) serve: Box<dyn Fn(tokio::io::DuplexStream) -> Serving + Send + Sync>,
}

impl std::fmt::Debug for MemoryServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryServer")
    }
}

impl MemoryServer {
    /// Writes `input` on a fresh connection, ends the client's side, and returns what the server
    /// wrote until it closed the connection; None if it did not close within `limit`. Runs on
    /// `rt` (a current-thread runtime is the fastest).
    pub fn exchange(
        &self,
        rt: &tokio::runtime::Runtime,
        input: &[u8],
        limit: Duration,
    ) -> Option<Vec<u8>> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let serving = (self.serve)(server);
        rt.block_on(async move {
            let task = tokio::spawn(serving);
            let talk = async {
                let (mut read, mut write) = tokio::io::split(&mut client);
                let send = async {
                    let _ = write.write_all(input).await;
                    let _ = write.shutdown().await;
                };
                let mut out = Vec::new();
                let receive = read.read_to_end(&mut out);
                let _ = tokio::join!(send, receive);
                out
            };
            let out = tokio::time::timeout(limit, talk).await.ok();
            task.abort();
            out
        })
    }
}
