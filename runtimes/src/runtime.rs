//! A runtime as the registry lists it ([`Runtime`]): its name, threading, I/O engine, crates and
//! HTTP/3 stack, and how it serves mounts under the kit's limits.

use std::sync::Arc;

use brigade_kit::limits::ServerLimits;
use brigade_kit::AppHandle;

use crate::memory::{MakeMemoryServer, MemoryServer};
use crate::{locked_version, Listener, Mount, Shutdown, RUNTIMES};

/// The I/O engine of every runtime on tokio: its reactor, on epoll.
pub const TOKIO_EPOLL: &str = "tokio (epoll)";

/// A runtime compiled into this binary: one module's `RUNTIME` (see `build.rs`, which derives the
/// registry from the modules and the feature lines).
#[derive(Debug)]
pub struct Runtime {
    /// Its name on the command line (its module's and feature's name).
    pub name: &'static str,
    /// How it uses threads, printed in reports.
    pub threading: &'static str,
    /// The I/O engine its sockets run on ([`TOKIO_EPOLL`], or io_uring for the `-uring`
    /// variants), printed in reports.
    pub engine: &'static str,
    /// The runtime whose adapter this one is, on another I/O engine (`ntex` for `ntex-uring`):
    /// compare leaves variants out of its default set (`--runtimes all` takes them).
    pub variant_of: Option<&'static str>,
    /// The crates it is, the framework first (`["axum", "hyper"]`): its version line names them
    /// with the versions this build resolved.
    pub(crate) crates: &'static [&'static str],
    /// Its HTTP/3 stack: the crates that serve `--protocol h3`, the one that answers the requests
    /// first and QUIC's last ([`Runtime::h3_stack`] names them with their versions), or why it
    /// offers none (said when `--protocol h3` is refused).
    pub(crate) h3: Result<H3Stack, &'static str>,
    pub(crate) serve_one: fn(Mount, usize, &ServerLimits, Shutdown) -> anyhow::Result<()>,
    /// The runtime's own hand-written hello ([`hello`]).
    pub(crate) hello: fn(Listener, usize, &ServerLimits, Shutdown) -> anyhow::Result<()>,
    /// The runtime's control server ([`crate::control`]): its own minimal server, no kit layer.
    pub(crate) control: fn(crate::control::Control) -> anyhow::Result<()>,
    /// The runtime's request path over in-memory connections, where it can serve one (the
    /// hyper-based runtimes and xitca-web; actix-web and ntex serve sockets only).
    pub(crate) memory: Option<MakeMemoryServer>,
}

impl Runtime {
    /// The runtime's server over in-memory connections for `app` under `limits`, if it has one.
    pub fn memory_server(
        &self,
        app: Arc<dyn AppHandle>,
        limits: &ServerLimits,
    ) -> Option<MemoryServer> {
        self.memory.map(|m| m(app, limits))
    }

    /// Whether it can serve over in-memory connections (its request path is a fuzz target).
    pub fn has_memory_server(&self) -> bool {
        self.memory.is_some()
    }
}

/// What a runtime without HTTP/3 answers `--protocol h3` with (scripts and tests look for it).
pub const H3_NOT_OFFERED: &str = "h3 not offered by this runtime";

/// An HTTP/3 stack ([`Runtime::h3_stack`]): its crates, and the kit's limits it cannot be told.
#[derive(Debug, Clone, Copy)]
pub(crate) struct H3Stack {
    /// The crates, the one that answers the requests first and QUIC's last.
    pub(crate) crates: &'static [&'static str],
    /// The limits of the start-up line's HTTP/3 clause that this stack does not set, in words
    /// (docs/reliability.md, "HTTP/3"); `serve` says them beside that clause.
    pub(crate) unset: &'static [&'static str],
}

impl Runtime {
    /// The HTTP/3 stack that serves `--protocol h3` on this runtime, with the versions this build
    /// resolved, or None where it offers no h3: `h3 0.0.8 + h3-quinn 0.0.10 on quinn 0.11.12` for
    /// the runtimes on hyper's loop (`hyper_loop`), whose QUIC half serves them all alike, each
    /// request handed to the runtime's own service as over HTTP/2; `xitca-http 0.9.6 + h3 0.0.8 +
    /// h3-quinn 0.0.10 on quinn 0.11.12` for xitca-web, through xitca-http's own h3 dispatcher.
    pub fn h3_stack(&self) -> Option<String> {
        let stack = self.h3.ok().filter(|s| !s.crates.is_empty())?;
        let named: Vec<String> = stack
            .crates
            .iter()
            .map(|c| format!("{c} {}", locked_version(c).unwrap_or("(version unknown)")))
            .collect();
        let (quic, above) = named.split_last()?;
        Some(if above.is_empty() {
            quic.clone()
        } else {
            format!("{} on {quic}", above.join(" + "))
        })
    }

    /// Whether it can serve `protocol` (every runtime serves h1, h2c and auto; h3 where
    /// [`Runtime::h3_stack`] names a stack).
    pub fn offers(&self, protocol: brigade_kit::limits::ServeProtocol) -> bool {
        protocol != brigade_kit::limits::ServeProtocol::H3
            || self.h3.is_ok_and(|s| !s.crates.is_empty())
    }

    /// The limits its HTTP/3 stack cannot be told, in words (empty where it sets them all, or
    /// offers no h3): `serve --protocol h3` says them after the limits it announces.
    pub fn h3_unset(&self) -> &'static [&'static str] {
        self.h3.map_or(&[], |s| s.unset)
    }

    /// Refuses limits whose protocol this runtime cannot serve, before anything is bound or
    /// announced: `--protocol h3` on a runtime without HTTP/3 is an error, never HTTP/2 in its place.
    pub fn check_protocol(&self, limits: &ServerLimits) -> anyhow::Result<()> {
        if self.offers(limits.protocol) {
            return Ok(());
        }
        let offering: Vec<&str> = RUNTIMES
            .iter()
            .filter(|r| r.offers(limits.protocol))
            .map(|r| r.name)
            .collect();
        let why = self
            .h3
            .err()
            .map_or(String::new(), |why| format!(": {why}"));
        anyhow::bail!(
            "--protocol {}: {H3_NOT_OFFERED} ({}{why}); it is offered by: {}",
            limits.protocol,
            self.name,
            if offering.is_empty() {
                "none compiled in".to_string()
            } else {
                offering.join(", ")
            }
        )
    }

    /// The crates it is, with the versions this build resolved: `axum 0.8.4 on hyper 1.7.0`.
    pub fn version(&self) -> String {
        let named: Vec<String> = self
            .crates
            .iter()
            .map(|c| format!("{c} {}", locked_version(c).unwrap_or("(version unknown)")))
            .collect();
        named.join(" on ")
    }

    /// Serves every mount until `shutdown` under the default [`ServerLimits`]; see
    /// [`Runtime::serve_with_limits`].
    pub fn serve(
        &'static self,
        mounts: Vec<Mount>,
        workers: usize,
        shutdown: Shutdown,
    ) -> anyhow::Result<()> {
        self.serve_with_limits(mounts, workers, &ServerLimits::default(), shutdown)
    }

    /// Serves every mount until `shutdown` under `limits`, each service on its own `workers`
    /// threads. Blocks. Returns once every server has drained (at most [`GRACE`] after the
    /// shutdown began).
    pub fn serve_with_limits(
        &'static self,
        mounts: Vec<Mount>,
        workers: usize,
        limits: &ServerLimits,
        shutdown: Shutdown,
    ) -> anyhow::Result<()> {
        limits.validate()?;
        self.check_protocol(limits)?;
        let (workers, limits) = (workers.max(1), *limits);
        let threads: Vec<_> = mounts
            .into_iter()
            .map(|m| {
                let sd = shutdown.clone();
                let name = format!("{}-{}", self.name, m.app.name());
                std::thread::Builder::new()
                    .name(name)
                    .spawn(move || (self.serve_one)(m, workers, &limits, sd))
            })
            .collect::<Result<_, _>>()?;
        let mut first_error = None;
        for t in threads {
            let r = t
                .join()
                .map_err(|_| anyhow::anyhow!("a server thread panicked"))
                .and_then(|r| r);
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brigade_kit::limits::ServeProtocol;

    #[test]
    fn every_runtime_names_its_h3_stack_on_quinn_or_says_why_it_has_none() {
        let h3 = ServerLimits {
            protocol: ServeProtocol::H3,
            ..ServerLimits::default()
        };
        for runtime in RUNTIMES {
            match runtime.h3 {
                Ok(_) => {
                    let stack = runtime.h3_stack().expect("a stack");
                    assert!(
                        stack.contains(" on quinn ") && !stack.contains("unknown"),
                        "{}: {stack}",
                        runtime.name
                    );
                    assert!(runtime.check_protocol(&h3).is_ok(), "{}", runtime.name);
                }
                Err(why) => {
                    assert_eq!(runtime.h3_stack(), None, "{}", runtime.name);
                    let refused = runtime.check_protocol(&h3).unwrap_err().to_string();
                    assert!(
                        refused.contains(H3_NOT_OFFERED) && refused.contains(why),
                        "{}: {refused}",
                        runtime.name
                    );
                }
            }
        }
    }
}
