//! The in-process provider: an application's route table called in this process, without a socket
//! or a runtime — the studies' reference point (an in-process call against loopback sockets). It dispatches
//! exactly as the hyper adapter does ([`crate::dispatch`]: the same matcher, the same JSON 404 and
//! 405, counted in the metrics the same way), applies the kit's body limit as every adapter does
//! (a refusal counted under its route), and calls the route through [`AppHandle::call`]. The answer
//! is the handler's own [`Reply`], so a study can check it equals the loopback answer byte for byte.

use std::sync::Arc;

use brigade_kit::limits::ServerLimits;
use brigade_kit::{ApiError, AppHandle, RawRequest, Reply};
use bytes::Bytes;

/// An application called in this process through its route table.
#[derive(Clone)]
pub struct InProcess {
    app: Arc<dyn AppHandle>,
    limits: ServerLimits,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InProcess({})", self.app.name())
    }
}

impl InProcess {
    /// The provider for `app`, under the kit's default [`ServerLimits`] (as `serve` runs).
    pub fn new(app: Arc<dyn AppHandle>) -> InProcess {
        InProcess {
            app,
            limits: ServerLimits::default(),
        }
    }

    /// The application's name.
    pub fn name(&self) -> &str {
        self.app.name()
    }

    /// Calls the route for `method` and `target` (a path with an optional `?query`) with `body`.
    pub async fn call(
        &self,
        method: &str,
        target: &str,
        content_type: Option<&str>,
        body: Bytes,
    ) -> Reply {
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path, Some(query.to_owned())),
            None => (target, None),
        };
        let routed = match crate::dispatch::route(&*self.app, method, path) {
            Ok(r) => r,
            Err(reply) => return reply,
        };
        let limit = self.limits.body_limit(routed.endpoint.limit);
        if body.len() > limit {
            return self.app.refused(routed.route, ApiError::too_large(limit));
        }
        let request = RawRequest {
            path: path.to_owned(),
            query,
            content_type: content_type.map(str::to_owned),
            body,
            traceparent: None,
            budget: None,
        };
        self.app.call(routed.route, request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brigade_kit::{App, Method, Request, Route, RouteTable};

    fn app() -> InProcess {
        let table = RouteTable::new()
            .get("/items/{id}", |_, r: Request| async move {
                Ok(Reply::text(format!(
                    "{} {}",
                    r.param("id"),
                    r.query.as_deref().unwrap_or_default()
                )))
            })
            .route(
                Route::new(Method::Post, "/echo", |_, r: Request| async move {
                    Ok(Reply::json_bytes(200, r.body.clone()))
                })
                .limit(16),
            );
        InProcess::new(Arc::new(App::new("items", table, Arc::new(()))))
    }

    #[tokio::test]
    async fn a_call_goes_through_the_route_table_and_its_rules() {
        let app = app();
        assert_eq!(app.name(), "items");
        let reply = app.call("GET", "/items/7?x=1", None, Bytes::new()).await;
        assert_eq!((reply.status, &reply.body[..]), (200, &b"7 x=1"[..]));
        let json = Some("application/json");
        let reply = app.call("POST", "/echo", json, Bytes::from("[1,2]")).await;
        assert_eq!((reply.status, &reply.body[..]), (200, &b"[1,2]"[..]));
        // The kit's errors, as every runtime adapter answers them.
        let status = |reply: Reply| reply.status;
        let nope = app.call("GET", "/nope", None, Bytes::new()).await;
        assert_eq!(status(nope.clone()), 404);
        assert!(String::from_utf8_lossy(&nope.body).contains("not_found"));
        let wrong = app.call("DELETE", "/echo", None, Bytes::new()).await;
        assert_eq!(wrong.status, 405);
        assert!(String::from_utf8_lossy(&wrong.body).contains("allowed: POST"));
        let big = Bytes::from(vec![b'1'; 17]);
        assert_eq!(status(app.call("POST", "/echo", json, big).await), 413);
        let text = Some("text/plain");
        assert_eq!(
            status(app.call("POST", "/echo", text, Bytes::from("1")).await),
            415
        );
    }
}
