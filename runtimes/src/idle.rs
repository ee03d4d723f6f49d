//! The connections a server holds open, to close the idle ones when the drain ends, for the
//! runtimes whose own stop cannot (actix-web, xitca-web): neither stack sends GOAWAY on a graceful
//! stop, and both wait for every connection, so an HTTP/2 client (or an HTTP/1.1 one between
//! requests) holding an idle connection would hold the stop to the grace. The kit cannot write a
//! GOAWAY into their streams (under TLS they are encrypted); it shuts the idle connection's reading
//! side, which their dispatchers take as the client's end and the client sees as the connection
//! closing. A request still running keeps its connection until it is answered (within the grace).

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Every connection open, weakly: each [`Conn`] lives in its connection's own data.
#[derive(Debug, Default, Clone)]
pub(crate) struct Held(Arc<Mutex<Vec<Weak<Conn>>>>);

/// One connection: a second handle on its socket (so that shutting it can never reach a socket
/// that reused a closed descriptor) and how many of its requests are running.
#[derive(Debug)]
pub(crate) struct Conn {
    socket: socket2::Socket,
    running: AtomicUsize,
}

/// One running request on a [`Conn`], for as long as it lives.
pub(crate) struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Conn {
    /// Counts a request running on this connection until the returned mark is dropped.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.running.fetch_add(1, Ordering::Relaxed);
        Busy(self.clone())
    }
}

impl Conn {
    /// Shuts the connection both ways: its service has ended. On io_uring a receive still in
    /// flight on the ring (a stalled TLS handshake whose timer fired, say) holds the socket open
    /// until it completes, which the shut makes it do. (xitca-web's; actix-web ends its own.)
    #[cfg(feature = "xitca")]
    pub(crate) fn end(&self) {
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
    }
}

impl Held {
    /// Tracks the connection on `socket`, for as long as the returned handle lives.
    pub(crate) fn track(&self, socket: BorrowedFd<'_>) -> Option<Arc<Conn>> {
        let conn = Arc::new(Conn {
            socket: socket2::Socket::from(socket.try_clone_to_owned().ok()?),
            running: AtomicUsize::new(0),
        });
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|c| c.strong_count() > 0);
        all.push(Arc::downgrade(&conn));
        Some(conn)
    }

    /// Shuts the reading side of every open connection with no request running.
    pub(crate) fn close_idle(&self) {
        let all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for conn in all.iter().filter_map(Weak::upgrade) {
            if conn.running.load(Ordering::Relaxed) == 0 {
                let _ = conn.socket.shutdown(std::net::Shutdown::Read);
            }
        }
    }
}
