//! What a handler answers: a status, a content type and a body.

use bytes::Bytes;
use serde::Serialize;

use super::{content_type, ApiError};

/// What a handler answers: a status, a content type and a body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The body.
    pub body: Bytes,
}

impl Reply {
    /// `status` with `value` encoded as JSON.
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Reply {
        match serde_json::to_vec(value) {
            Ok(body) => Reply {
                status,
                content_type: content_type::JSON,
                body: body.into(),
            },
            Err(e) => ApiError::internal(format!("encoding a reply: {e}")).to_reply(),
        }
    }

    /// `status` with a body that is JSON already (stored JSON answered as it is).
    pub fn json_bytes(status: u16, body: Bytes) -> Reply {
        Reply {
            status,
            content_type: content_type::JSON,
            body,
        }
    }

    /// 200 with a JSON body.
    pub fn ok<T: Serialize + ?Sized>(value: &T) -> Reply {
        Reply::json(200, value)
    }

    /// 201 with a JSON body.
    pub fn created<T: Serialize + ?Sized>(value: &T) -> Reply {
        Reply::json(201, value)
    }

    /// 204 with no body.
    pub fn no_content() -> Reply {
        Reply {
            status: 204,
            content_type: content_type::TEXT,
            body: Bytes::new(),
        }
    }

    /// 200 with a plain-text body.
    pub fn text(body: impl Into<Bytes>) -> Reply {
        Reply {
            status: 200,
            content_type: content_type::TEXT,
            body: body.into(),
        }
    }

    /// 200 with a binary body.
    pub fn octets(body: impl Into<Bytes>) -> Reply {
        Reply {
            status: 200,
            content_type: content_type::OCTETS,
            body: body.into(),
        }
    }
}

impl From<ApiError> for Reply {
    fn from(e: ApiError) -> Reply {
        e.to_reply()
    }
}
