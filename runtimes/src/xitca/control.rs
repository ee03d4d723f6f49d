//! xitca-web's control server ([`crate::control`]) and its application, which the io_uring
//! sibling's control serves too.

use std::convert::Infallible;

use bytes::Bytes;
use xitca_http::HttpServiceBuilder;
use xitca_web::body::Body;
use xitca_web::handler::handler_service;
use xitca_web::http::Response;
use xitca_web::service::ready::ReadyService;
use xitca_web::service::{Service, ServiceExt};
use xitca_web::App;

use crate::control::{echo_answer, Control, CONTROL_BODY, ECHO_PATH};

/// The control server: xitca-web's own `HttpServer` on one worker thread (xitca-server's one
/// accepting thread beside it), every timeout and limit at xitca-http's defaults (its default
/// HTTP/2 settings too). On plaintext, HTTP/1.1 and h2c by prior knowledge on the one listener
/// (`h2c_prior_knowledge`: xitca-http peeks at each connection's first bytes for HTTP/2's preface;
/// without it a plaintext port is HTTP/1.1 only). Under TLS, xitca-web's `HttpServer` only binds
/// an address itself (`bind_rustls`, no TLS `listen`), so the control does what `bind_rustls`
/// does inside on the listener it is handed: xitca-http's service builder with the kit's rustls
/// configuration (rustls 0.23, the same crate; its ALPN `h2, http/1.1` as it is, where
/// `bind_rustls` would add the same two again) around the same application, on xitca-server.
/// HTTP/3 where asked for ([`Control::bind`]): the same application behind xitca-http's service
/// builder on the QUIC socket bound beside the listener, as xitca-web's `bind_h3` serves it.
pub(crate) fn control(mut c: Control) -> anyhow::Result<()> {
    let quic = c.take_h3();
    match c.tls {
        None => xitca_web::HttpServer::serve(control_app())
            .worker_threads(1)
            .h2c_prior_knowledge()
            .listen(c.listener)?
            .run()
            .wait()?,
        Some(tls) => {
            let mut server = xitca_server::Builder::new().worker_threads(1).listen(
                "xitca-web-rustls",
                c.listener,
                control_app().enclosed(HttpServiceBuilder::new().rustls(tls)),
            );
            if let Some((socket, tls)) = quic {
                // HTTP/3 as xitca-web's `bind_h3` serves it (xitca-http's service builder, which
                // takes a QUIC stream to its h3 dispatcher), on the socket bound beside the listener.
                let quic = super::h3::Quic::on(socket, crate::control::quic_config(&tls)?);
                server = server.listen(
                    "xitca-web-h3",
                    quic,
                    control_app().enclosed(HttpServiceBuilder::new()),
                );
            }
            server.build().wait()?
        }
    }
    Ok(())
}

/// The control's application: [`ECHO_PATH`] takes the whole body (xitca-web's `Bytes` extractor,
/// which sets no limit) and answers its length; every other path (xitca-router's catch-all, `/`
/// included) answers [`CONTROL_BODY`] with the body unread. Any method on both; xitca-web answers
/// a `String` and a `&str` as `text/plain; charset=utf-8`.
pub(crate) fn control_app() -> impl Service<
    Response = impl ReadyService
                   + Service<
        xitca_web::http::WebRequest,
        Response = Response<impl Body<Data = Bytes, Error: std::fmt::Debug> + 'static>,
        Error = Infallible,
    > + 'static,
    Error: std::fmt::Debug + 'static,
> + Send
       + Sync
       + 'static {
    App::new()
        .at(
            ECHO_PATH,
            handler_service(|body: Bytes| async move { echo_answer(body.len()) }),
        )
        .at("/{*}", handler_service(|| async { CONTROL_BODY }))
        .finish()
}
