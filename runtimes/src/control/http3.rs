//! HTTP/3 on the controls of the hyper-based runtimes: the `h3` crate's own serving loop, as its
//! example server has it — each QUIC connection built with `h3::server::Connection::new` (every h3
//! setting at its default), each request on a task of its own, answered on the stream — in front
//! of the control's two routes, with no timer, limit, gate or guard of the kit's. It is the same
//! control for the five: none of them has an h3 of its own that Brigade serves on (they serve it
//! through the `h3` crate Brigade mounts, `hyper_loop::quic`), so what fails here is the `h3`
//! crate's, and what fails only through Brigade is the kit's or its mounting.

use std::sync::Arc;

use bytes::{Buf, Bytes};
use http::{header, HeaderValue, Response};

use super::{echo_answer, CONTROL_BODY, ECHO_PATH};

type RequestStream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// The QUIC endpoint on `socket` with the control's QUIC configuration
/// ([`super::quic_config`]); its driver spawned on the tokio runtime this is called in.
pub(super) fn endpoint(
    socket: std::net::UdpSocket,
    tls: &rustls::ServerConfig,
) -> anyhow::Result<quinn::Endpoint> {
    Ok(quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(super::quic_config(tls)?),
        socket,
        Arc::new(quinn::TokioRuntime),
    )?)
}

/// Serves HTTP/3 on `endpoint` until the process ends: a task per connection.
pub(super) async fn serve(endpoint: quinn::Endpoint) {
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(async move {
            match incoming.await {
                Ok(quic) => connection(quic).await,
                Err(e) => tracing::debug!(error = %e, "control QUIC handshake failed"),
            }
        });
    }
}

/// One connection's requests, each on a task of its own, until the client closes it or the h3
/// crate ends it with an error (which is its own to send).
async fn connection(quic: quinn::Connection) {
    let built = h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(quic)).await;
    let mut conn = match built {
        Ok(conn) => conn,
        Err(e) => return tracing::debug!(error = %e, "control h3 connection refused"),
    };
    loop {
        match conn.accept().await {
            Ok(Some(resolver)) => {
                tokio::spawn(async move {
                    match resolver.resolve_request().await {
                        Ok((req, stream)) => {
                            if let Err(e) = answer(req.uri().path(), stream).await {
                                tracing::debug!(error = %e, "control h3 request failed");
                            }
                        }
                        Err(e) => tracing::debug!(error = %e, "control h3 request refused"),
                    }
                });
            }
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(error = %e, "control h3 connection ended with an error");
                break;
            }
        }
    }
}

/// The answer on `path`: [`ECHO_PATH`] reads the body to its end and answers its length; every
/// other path answers [`CONTROL_BODY`] with the body unread. 200, `text/plain`, its length named.
async fn answer(path: &str, mut stream: RequestStream) -> Result<(), h3::error::StreamError> {
    let body = if path == ECHO_PATH {
        let mut length = 0;
        while let Some(chunk) = stream.recv_data().await? {
            length += chunk.remaining();
        }
        echo_answer(length)
    } else {
        CONTROL_BODY.to_owned()
    };
    let mut resp = Response::new(());
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    stream.send_response(resp).await?;
    stream.send_data(Bytes::from(body)).await?;
    stream.finish().await
}
