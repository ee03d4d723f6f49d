//! A request as a handler sees it, whatever runtime parsed it, and the JSON and query decoding with
//! Brigade's error rules (400 for syntax, 422 for content, the offending field named).

use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::ApiError;

/// A request as a handler sees it, whatever runtime parsed it.
#[derive(Debug, Default)]
pub struct Request {
    /// The request's path as it came, percent-escapes and all, without the query: the kit took
    /// the path parameters from it ([`AppHandle::call`](super::AppHandle::call)), so every runtime
    /// delivers the same values whatever its router decodes.
    pub path: String,
    /// Path parameters by name, each percent-decoded once: taken from [`Request::path`] by
    /// [`AppHandle::call`](super::AppHandle::call), by position in the matched route's pattern.
    pub params: Vec<(String, String)>,
    /// The raw query string, without `?`.
    pub query: Option<String>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The whole body, already limited by the adapter.
    pub body: Bytes,
    /// The W3C `traceparent` header, if any: the request joins that trace (see
    /// [`crate::observe::trace`]).
    pub traceparent: Option<String>,
    /// The `x-brigade-budget-ms` header, if any: how long the caller still waits for the answer,
    /// which bounds the request's store operations and peer calls (see [`crate::deadline`]).
    pub budget: Option<String>,
}

/// A request as an adapter hands it to the kit ([`AppHandle::call`](super::AppHandle::call)), its
/// route already matched by the runtime's router: what the runtime parsed, before the kit takes
/// the path parameters and makes it the [`Request`] the handler sees.
#[derive(Debug, Default)]
pub struct RawRequest {
    /// The path as it came, percent-escapes and all, without the query.
    pub path: String,
    /// The raw query string, without `?`.
    pub query: Option<String>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The whole body, already limited by the adapter.
    pub body: Bytes,
    /// The W3C `traceparent` header, if any.
    pub traceparent: Option<String>,
    /// The `x-brigade-budget-ms` header, if any.
    pub budget: Option<String>,
}

impl Request {
    /// The handler's request: `raw` with its path parameters.
    pub(super) fn from_raw(raw: RawRequest, params: Vec<(String, String)>) -> Request {
        Request {
            path: raw.path,
            params,
            query: raw.query,
            content_type: raw.content_type,
            body: raw.body,
            traceparent: raw.traceparent,
            budget: raw.budget,
        }
    }

    /// A path parameter by name (empty if the pattern has none of that name).
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }

    /// Decodes the body as JSON: syntax errors are 400, values that break a type or rule are 422
    /// with the path of the offending field in the message.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        decode_json(&self.body)
    }

    /// Decodes the query string; a value of the wrong type is 400 naming the parameter.
    pub fn query<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        let raw = self.query.as_deref().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(raw.as_bytes()));
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            ApiError::bad_request(format!("query parameter {path}: {}", e.inner()))
        })
    }
}

/// Decodes JSON bytes with Brigade's error rules (400 for syntax, 422 for content, field path named).
pub fn decode_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.inner();
        let field = if path == "." {
            String::new()
        } else {
            format!("{path}: ")
        };
        match inner.classify() {
            serde_json::error::Category::Data => ApiError::unprocessable(format!("{field}{inner}")),
            _ => ApiError::bad_request(format!("malformed JSON: {inner}")),
        }
    })?;
    de.end()
        .map_err(|e| ApiError::bad_request(format!("malformed JSON: {e}")))?;
    Ok(value)
}
