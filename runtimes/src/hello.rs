//! Hand-written minimal hello servers, one per runtime (each runtime module's `hello`), in each
//! runtime's plainest idiom: the floor against which `docs/overhead.md` measures the cost of
//! Brigade's route table. They run with exactly the adapters' threading, listener, limits and
//! shutdown (the adapters' own serving functions, under the kit's default [`ServerLimits`]), so the
//! only difference measured is the request path.

use brigade_kit::limits::ServerLimits;

use crate::Shutdown;

/// The body every hand-written hello answers on `GET /bench/hello`, the same as Brigade's.
pub const HELLO: &str = brigade_kit::standard::HELLO;
/// Its content type (salvo's and poem's hellos get it from their frameworks' `&str` replies).
#[allow(dead_code)]
pub(crate) const HELLO_TYPE: &str = "text/plain; charset=utf-8";

/// Serves the hand-written hello of runtime `name` on `listener` until `shutdown`. Blocks.
pub fn serve_hello(
    name: &str,
    listener: std::net::TcpListener,
    workers: usize,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let Some(runtime) = crate::find(name) else {
        anyhow::bail!("no hand-written hello for runtime {name:?} in this binary");
    };
    (runtime.hello)(
        listener.into(),
        workers.max(1),
        &ServerLimits::default(),
        shutdown,
    )
}
