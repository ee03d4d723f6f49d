//! The load generator's HTTP clients: one lean connection per protocol, written for a load
//! generator's hot path, that knows nothing of scenarios, schedules or results.
//!
//! - [`http1`]: HTTP/1.1 on tokio's `TcpStream`, plaintext or over TLS ([`tls`], rustls on
//!   `ring`, every byte counted on the socket and every handshake timed), a request encoded once
//!   ([`http1::encode`]) and its answer read whole ([`http1::read_answer`] is its parser as a
//!   function of bytes, for fuzzing).
//! - [`http2`]: HTTP/2 (`h2c`, `h2-tls`) with its own framing and HPACK, one connection shared by
//!   many request loops; [`http3`]: HTTP/3 over QUIC (quinn and `h3`) behind the same sharing.
//! - [`Dialer`] opens any protocol's connection; [`Exchange`] is what one request gave, on any
//!   protocol; [`Target`] is where a connection goes (a URL resolved once); [`Request`] is what is
//!   sent; [`fetch::get`] is one `GET` over any protocol, for probes that are not load.
//!
//! `brigade-load` runs scenarios on these clients; a caller that wants one request at a time over
//! the generator's exact wire behaviour can use them alone.

pub mod dialer;
pub mod exchange;
pub mod failure;
pub mod fetch;
pub mod http1;
pub mod http2;
pub mod http3;
pub mod request;
pub mod target;
pub mod tls;

pub use dialer::Dialer;
pub use exchange::{Exchange, WireCount};
pub use failure::Failure;
pub use request::Request;
pub use target::Target;
