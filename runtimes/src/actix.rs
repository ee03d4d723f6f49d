//! actix-web: each endpoint becomes an actix `Resource` with one `Route` per method and a 405
//! default service; bodies come through actix's `Bytes` extractor under a `PayloadConfig` limit.

use std::sync::Arc;

use actix_web::http::header;
use actix_web::web::{self, Bytes, PayloadConfig};
use actix_web::{HttpRequest, HttpResponse};
use brigade_kit::http::Endpoint;
use brigade_kit::{ApiError, AppHandle, Method, Reply, Request};

use crate::{Mount, Shutdown, GRACE};

content_type_values!(header::HeaderValue);

/// The one place a [`Reply`] becomes an actix response.
fn respond(reply: Reply) -> HttpResponse {
    let status = actix_web::http::StatusCode::from_u16(reply.status)
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, content_type_value(reply.content_type)))
        .body(reply.body)
}

fn method(m: Method) -> actix_web::http::Method {
    match m {
        Method::Get => actix_web::http::Method::GET,
        Method::Post => actix_web::http::Method::POST,
        Method::Put => actix_web::http::Method::PUT,
        Method::Patch => actix_web::http::Method::PATCH,
        Method::Delete => actix_web::http::Method::DELETE,
    }
}

fn resource(app: &Arc<dyn AppHandle>, e: &Endpoint, path: &str) -> actix_web::Resource {
    let mut res = web::resource(path).app_data(PayloadConfig::new(e.limit));
    for &(m, route) in &e.methods {
        let app = app.clone();
        res = res.route(web::method(method(m)).to(
            move |req: HttpRequest, body: Result<Bytes, actix_web::Error>| {
                let app = app.clone();
                async move {
                    let body = match body {
                        Ok(b) => b,
                        Err(err)
                            if err.as_response_error().status_code()
                                == actix_web::http::StatusCode::PAYLOAD_TOO_LARGE =>
                        {
                            return respond(
                                app.refused(route, ApiError::payload_too_large(err.to_string())),
                            )
                        }
                        Err(err) => {
                            return respond(
                                app.refused(route, ApiError::bad_request(err.to_string())),
                            )
                        }
                    };
                    let request = Request {
                        params: req
                            .match_info()
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect(),
                        query: Some(req.query_string().to_string()).filter(|q| !q.is_empty()),
                        content_type: req
                            .headers()
                            .get(header::CONTENT_TYPE)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string),
                        body,
                        traceparent: req
                            .headers()
                            .get("traceparent")
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string),
                    };
                    respond(app.call(route, request).await)
                }
            },
        ));
    }
    let app = app.clone();
    res.default_service(web::to(move |req: HttpRequest| {
        let reply = app.unmatched(req.method().as_str(), req.path());
        async move { respond(reply) }
    }))
}

/// The JSON 404 (or 405) of a request no resource takes.
fn not_found(
    app: &Arc<dyn AppHandle>,
) -> impl Fn(HttpRequest) -> std::future::Ready<HttpResponse> + Clone + 'static {
    let app = app.clone();
    move |req: HttpRequest| {
        std::future::ready(respond(app.unmatched(req.method().as_str(), req.path())))
    }
}

/// Registers `app`'s endpoints and the JSON 404 on an actix service config: one `Scope` per first
/// path segment (`/waiters`, `/bench`, ...) holding its resources, as an actix app is usually laid
/// out, so a request is matched against its scope's few resources rather than all of them.
pub(crate) fn configure(
    app: Arc<dyn AppHandle>,
) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
    move |cfg: &mut web::ServiceConfig| {
        let mut scopes: Vec<(&str, Vec<&Endpoint>)> = Vec::new();
        for e in app.endpoints() {
            let first = e
                .path
                .trim_start_matches('/')
                .split('/')
                .next()
                .unwrap_or("");
            match scopes.iter_mut().find(|(f, _)| *f == first) {
                Some((_, group)) => group.push(e),
                None => scopes.push((first, vec![e])),
            }
        }
        for (first, group) in scopes {
            let prefix = format!("/{first}");
            if first.starts_with('{') {
                for e in group {
                    cfg.service(resource(&app, e, e.path));
                }
                continue;
            }
            let mut scope = web::scope(&prefix).default_service(web::to(not_found(&app)));
            for e in group {
                scope = scope.service(resource(&app, e, &e.path[prefix.len()..]));
            }
            cfg.service(scope);
        }
        cfg.default_service(web::to(not_found(&app)));
    }
}

pub(crate) fn serve(mount: Mount, workers: usize, shutdown: Shutdown) -> anyhow::Result<()> {
    run_config(configure(mount.app), mount.listener, workers, shutdown)
}

/// Serves any actix service configuration with Brigade's threading and shutdown (the baseline
/// uses it too).
pub(crate) fn run_config(
    routes: impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static,
    listener: std::net::TcpListener,
    workers: usize,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    actix_web::rt::System::new().block_on(async move {
        let server =
            actix_web::HttpServer::new(move || actix_web::App::new().configure(routes.clone()))
                .workers(workers)
                .backlog(1024)
                .disable_signals()
                .shutdown_timeout(GRACE.as_secs())
                .listen(listener)?
                .run();
        let handle = server.handle();
        actix_web::rt::spawn(async move {
            shutdown.wait().await;
            handle.stop(true).await;
        });
        server.await?;
        Ok(())
    })
}
