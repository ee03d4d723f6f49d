//! The routes every service carries: `/health`, `/ready`, and the bench endpoints that reproduce
//! the classic studies' operations (hello, send and get bytes, send strings and get them reversed,
//! fixed-size static bodies) identically on every runtime.

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use schemars::JsonSchema;
use serde::Serialize;

use crate::http::{ApiError, BodyKind, Reply, Request, Route, RouteTable, BENCH_BODY_LIMIT};
use crate::openapi::Body;
use crate::store::Store;

/// What the standard routes need to know about the service that carries them.
pub trait ServiceInfo: Send + Sync + 'static {
    /// The service's name (`waiter`).
    fn service(&self) -> &str;
    /// The runtime serving it (`axum`).
    fn runtime(&self) -> &str;
    /// Its store, asked by `/ready`.
    fn store(&self) -> &dyn Store;
}

/// The body of `GET /bench/hello`.
pub const HELLO: &str = "Hello, World!";
/// Smallest and largest `GET /bench/static/{size}`.
pub const STATIC_SIZES: std::ops::RangeInclusive<usize> = 256..=524_288;

static STATIC_BODY: LazyLock<Bytes> = LazyLock::new(|| {
    Bytes::from(
        (0..*STATIC_SIZES.end())
            .map(|i| b"brigade!"[i % 8])
            .collect::<Vec<u8>>(),
    )
});

/// `GET /health`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Health<'a> {
    /// Always `ok`.
    pub status: &'a str,
    /// The service's name.
    pub service: &'a str,
    /// The runtime serving it.
    pub runtime: &'a str,
    /// Its store's backend.
    pub store: &'a str,
}

/// `GET /ready`'s answer when the store can be reached.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Ready {
    /// Always `ready`.
    pub status: &'static str,
}

/// `GET /bench/hello/{name}`'s answer: the RPC study's `sayHello`, with a human-readable path
/// parameter that every runtime must deliver alike (decoded once by the kit: `%2F` a `/`, `+` a
/// `+`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Greeting {
    /// The name, as the path gave it, percent-decoded.
    pub name: String,
    /// `Hello, {name}!`.
    pub greeting: String,
}

/// `POST /bench/bytes`' answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Length {
    /// The body's length in bytes.
    pub length: usize,
}

/// `POST /bench/strings`' answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Count {
    /// How many strings the array held.
    pub count: usize,
}

// Why longer than a screen: the one list of the kit's standard routes, each with its handler and
// its documentation, read top to bottom as a route table; splitting it would scatter the list, and
// naming the bench handlers would change what their futures hold on the measured bench routes.
/// `/health`, `/ready` and `/bench/*`, for any service state.
pub fn routes<S: ServiceInfo>() -> RouteTable<S> {
    RouteTable::new()
        .get("/health", |s: Arc<S>, _| async move {
            Ok(Reply::ok(&Health {
                status: "ok",
                service: s.service(),
                runtime: s.runtime(),
                store: s.store().kind(),
            }))
        })
        .answers::<Health>(200)
        .get("/ready", |s: Arc<S>, _| async move {
            match s.store().ping().await {
                Ok(()) => Ok(Reply::ok(&Ready { status: "ready" })),
                Err(e) => Err(ApiError::unavailable(format!("store not reachable: {e}"))),
            }
        })
        .answers::<Ready>(200)
        .errors(&[503])
        .get("/bench/hello", |_, _| async { Ok(Reply::text(HELLO)) })
        .answers_with(200, Body::Text)
        .get("/bench/hello/{name}", |_, r: Request| async move {
            let name = r.param("name").to_string();
            let greeting = format!("Hello, {name}!");
            Ok(Reply::ok(&Greeting { name, greeting }))
        })
        .answers::<Greeting>(200)
        .route(
            Route::new(
                crate::Method::Post,
                "/bench/bytes",
                |_, r: Request| async move {
                    Ok(Reply::ok(&Length {
                        length: r.body.len(),
                    }))
                },
            )
            .body(BodyKind::Raw)
            .limit(BENCH_BODY_LIMIT),
        )
        .answers::<Length>(200)
        .get("/bench/bytes/{n}", |_, r: Request| async move {
            let n = size_param(&r, "n", 0..=BENCH_BODY_LIMIT)?;
            Ok(Reply::octets(pseudo_random_bytes(n)))
        })
        .param(
            "n",
            serde_json::json!({"type": "integer", "minimum": 0, "maximum": BENCH_BODY_LIMIT}),
        )
        .answers_with(200, Body::Octets)
        .errors(&[422])
        .route(
            Route::new(
                crate::Method::Post,
                "/bench/strings",
                |_, r: Request| async move {
                    let strings: Vec<String> = r.json()?;
                    Ok(Reply::ok(&Count {
                        count: strings.len(),
                    }))
                },
            )
            .limit(BENCH_BODY_LIMIT),
        )
        .accepts::<Vec<String>>()
        .answers::<Count>(200)
        .route(
            Route::new(
                crate::Method::Post,
                "/bench/strings/reverse",
                |_, r: Request| async move {
                    let mut strings: Vec<String> = r.json()?;
                    strings.reverse();
                    Ok(Reply::ok(&strings))
                },
            )
            .limit(BENCH_BODY_LIMIT),
        )
        .accepts::<Vec<String>>()
        .answers::<Vec<String>>(200)
        .get("/bench/static/{size}", |_, r: Request| async move {
            let size = size_param(&r, "size", STATIC_SIZES)?;
            Ok(Reply::octets(STATIC_BODY.slice(..size)))
        })
        .param(
            "size",
            serde_json::json!({
                "type": "integer",
                "minimum": STATIC_SIZES.start(),
                "maximum": STATIC_SIZES.end(),
            }),
        )
        .answers_with(200, Body::Octets)
        .errors(&[422])
}

/// A size from the path: not a number is 400, out of `range` is 422.
fn size_param(
    r: &Request,
    name: &str,
    range: std::ops::RangeInclusive<usize>,
) -> Result<usize, ApiError> {
    let raw = r.param(name);
    let n: usize = raw
        .parse()
        .map_err(|_| ApiError::bad_request(format!("{name}: {raw:?} is not a size in bytes")))?;
    if !range.contains(&n) {
        return Err(ApiError::unprocessable(format!(
            "{name}: must be {}..={}",
            range.start(),
            range.end()
        )));
    }
    Ok(n)
}

/// `n` bytes from a fixed xorshift sequence: cheap, incompressible, the same on every runtime.
pub fn pseudo_random_bytes(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_random_bytes_have_the_asked_length_and_vary() {
        let b = pseudo_random_bytes(1001);
        assert_eq!(b.len(), 1001);
        assert!(b.iter().filter(|&&x| x == b[0]).count() < 100);
        assert_eq!(pseudo_random_bytes(0).len(), 0);
    }

    #[test]
    fn sizes_outside_their_range_are_422_and_non_numbers_400() {
        let req = |v: &str| Request {
            params: vec![("size".into(), v.into())],
            ..Default::default()
        };
        assert_eq!(size_param(&req("256"), "size", STATIC_SIZES).unwrap(), 256);
        assert_eq!(
            size_param(&req("100"), "size", STATIC_SIZES)
                .unwrap_err()
                .code,
            crate::ErrorCode::Unprocessable
        );
        assert_eq!(
            size_param(&req("$gt"), "size", STATIC_SIZES)
                .unwrap_err()
                .code,
            crate::ErrorCode::BadRequest
        );
    }
}
