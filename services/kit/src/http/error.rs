//! The one error type of every handler ([`ApiError`]), its codes and their statuses, and the JSON
//! error body `{"error": {"code", "message"}}` it becomes.

use std::fmt;

use serde::Serialize;

use super::Reply;

/// The error codes of the API and their statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// 400: malformed JSON, a bad query string or path value.
    BadRequest,
    /// 404: no such path or resource.
    NotFound,
    /// 408: the request body did not arrive within the server's body-read timeout.
    RequestTimeout,
    /// 405: a known path with the wrong method.
    MethodNotAllowed,
    /// 409: the resource is not in a state that allows the change, or a unique key is taken.
    Conflict,
    /// 413: the body is larger than the route accepts.
    PayloadTooLarge,
    /// 415: a JSON route was sent something that is not JSON.
    UnsupportedMediaType,
    /// 422: well-formed input that breaks a rule.
    Unprocessable,
    /// 431: the request head has more headers, or more bytes, than the server accepts.
    HeaderFieldsTooLarge,
    /// 500: a bug or an unexpected failure; details go to the log only.
    Internal,
    /// 502: a peer service answered with something unusable.
    BadGateway,
    /// 503: a peer service or the store cannot be reached.
    Unavailable,
}

impl ErrorCode {
    /// The HTTP status for this code.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::BadRequest => 400,
            ErrorCode::NotFound => 404,
            ErrorCode::RequestTimeout => 408,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::Conflict => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::Unprocessable => 422,
            ErrorCode::HeaderFieldsTooLarge => 431,
            ErrorCode::Internal => 500,
            ErrorCode::BadGateway => 502,
            ErrorCode::Unavailable => 503,
        }
    }

    /// The code's name in error bodies.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::NotFound => "not_found",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::Conflict => "conflict",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::Unprocessable => "unprocessable",
            ErrorCode::HeaderFieldsTooLarge => "header_fields_too_large",
            ErrorCode::Internal => "internal",
            ErrorCode::BadGateway => "bad_gateway",
            ErrorCode::Unavailable => "unavailable",
        }
    }
}

/// The one error type of every handler: a code and a message for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ApiError {
    /// What went wrong, which fixes the status.
    pub code: ErrorCode,
    /// A sentence for the client; for 500 a generic one (the cause is logged).
    pub message: String,
}

macro_rules! error_constructors {
    ($($name:ident => $code:ident),* $(,)?) => {
        $(
            #[doc = concat!("An error with code `", stringify!($code), "`.")]
            pub fn $name(message: impl Into<String>) -> ApiError {
                ApiError { code: ErrorCode::$code, message: message.into() }
            }
        )*
    };
}

impl ApiError {
    error_constructors! {
        bad_request => BadRequest,
        not_found => NotFound,
        method_not_allowed => MethodNotAllowed,
        conflict => Conflict,
        payload_too_large => PayloadTooLarge,
        unsupported_media_type => UnsupportedMediaType,
        unprocessable => Unprocessable,
        request_timeout => RequestTimeout,
        header_fields_too_large => HeaderFieldsTooLarge,
        bad_gateway => BadGateway,
        unavailable => Unavailable,
    }

    /// A 500 whose cause is logged here and never sent to the client.
    pub fn internal(cause: impl fmt::Display) -> ApiError {
        tracing::error!(%cause, "internal error");
        ApiError {
            code: ErrorCode::Internal,
            message: "internal error".into(),
        }
    }

    /// The 404 for a path no route matches.
    pub fn no_route(method: &str, path: &str) -> ApiError {
        ApiError::not_found(format!("no route for {method} {path}"))
    }

    /// The 413 for a body over `limit` bytes.
    pub fn too_large(limit: usize) -> ApiError {
        ApiError::payload_too_large(format!("body larger than {limit} bytes"))
    }

    /// The error as the JSON body `{"error": {"code", "message"}}` with its status.
    pub fn to_reply(&self) -> Reply {
        #[derive(Serialize)]
        struct Body<'a> {
            error: Inner<'a>,
        }
        #[derive(Serialize)]
        struct Inner<'a> {
            code: &'a str,
            message: &'a str,
        }
        Reply::json(
            self.code.status(),
            &Body {
                error: Inner {
                    code: self.code.as_str(),
                    message: &self.message,
                },
            },
        )
    }
}
