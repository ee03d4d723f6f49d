//! The request path over in-memory connections (fuzzing), on the same xitca server as a socket.

use std::sync::Arc;

use brigade_kit::limits::ServerLimits;
use brigade_kit::AppHandle;
use xitca_http::HttpServiceBuilder;
use xitca_io::net::Stream;
use xitca_server::net::{IntoListener, Listen};
use xitca_web::service::ServiceExt;

/// Socket pairs handed to a memory server's worker, as accepted connections.
struct Pairs(
    tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<std::os::unix::net::UnixStream>>,
);

impl IntoListener for Pairs {
    type Listener = Pairs;

    fn into_listener(self) -> std::io::Result<Pairs> {
        Ok(self)
    }
}

impl Listen for Pairs {
    async fn accept(&self) -> std::io::Result<Stream> {
        // No sender left: the memory server is gone, and so is its accept loop.
        let stream = self.0.lock().await.recv().await;
        let stream = stream.ok_or(std::io::ErrorKind::BrokenPipe)?;
        let addr = stream.peer_addr()?;
        Ok(Stream::Unix(stream, addr))
    }
}

/// What a memory server holds of its xitca server: the way in and the stop.
struct MemoryConnections {
    pairs: Option<tokio::sync::mpsc::UnboundedSender<std::os::unix::net::UnixStream>>,
    handle: xitca_server::ServerHandle,
}

impl Drop for MemoryConnections {
    fn drop(&mut self) {
        // The worker's accept loop ends with its last sender, then the server stops.
        self.pairs.take();
        self.handle.stop(false);
    }
}

/// The request path over in-memory connections (fuzzing): the same xitca server, HTTP/1.1 service,
/// guard and limits as on a socket, on one worker. xitca-http reads only its own stream types
/// (its connection services and dispatchers take no other I/O), so each in-memory connection is
/// bridged to one end of a Unix socket pair, a kernel buffer without a network, whose other end
/// the server accepts as it accepts a Unix socket.
pub(super) fn memory(app: Arc<dyn AppHandle>, limits: &ServerLimits) -> crate::MemoryServer {
    let (pairs, accepted) = tokio::sync::mpsc::unbounded_channel();
    let gate = super::Gate::new(limits);
    let factory = super::app(app, limits)
        .enclosed(HttpServiceBuilder::with_config(super::config(limits)))
        .enclosed(gate);
    let mut server = xitca_server::Builder::new()
        .worker_threads(1)
        .server_threads(1)
        .disable_signal()
        .listen(
            "brigade-memory",
            Pairs(tokio::sync::Mutex::new(accepted)),
            factory,
        )
        .build();
    let handle = server.handle().expect("the memory server starts");
    std::thread::Builder::new()
        .name("brigade-xitca-memory".into())
        .spawn(move || server.wait())
        .expect("a thread for the memory server");
    let connections = MemoryConnections {
        pairs: Some(pairs),
        handle,
    };
    crate::MemoryServer {
        serve: Box::new(move |mut io| {
            let pair = std::os::unix::net::UnixStream::pair().and_then(|(ours, theirs)| {
                theirs.set_nonblocking(true)?;
                ours.set_nonblocking(true)?;
                Ok((ours, theirs))
            });
            let ours = pair.ok().and_then(|(ours, theirs)| {
                let sent = connections.pairs.as_ref()?.send(theirs);
                sent.is_ok().then_some(ours)
            });
            Box::pin(async move {
                let Some(ours) = ours else { return };
                let Ok(mut ours) = tokio::net::UnixStream::from_std(ours) else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut io, &mut ours).await;
            })
        }),
    }
}
