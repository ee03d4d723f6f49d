//! The request shapes the HTTP studies send, as scenarios (the `docs/methodology.md` syntax) built
//! from their sizes: every one goes to the bench endpoints every Brigade service carries, so none
//! names a service (it goes to the first one the server announces), and each is one request.
//!
//! The generator crate's built-in bench scenarios (`bytes`, `strings`, `static`, for `brigade
//! load` and `compare --scenarios`) send the same requests at fixed sizes; the studies need their
//! sizes as flags, so they build their own here from the same endpoints.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use brigade_load::scenario::Scenario;

/// The path the bad-URL step asks for: no service has a route there.
pub(crate) const UNKNOWN_PATH: &str = "/bench/no-such-route";

/// One request to the bench endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Its name in tables (`send 100000 bytes`).
    pub name: String,
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The path it asks for.
    pub path: String,
    /// Its body (`None`: no body).
    pub body: Option<String>,
    /// The content type of its body.
    pub content_type: &'static str,
    /// The status it must be answered with.
    pub status: u16,
}

impl Shape {
    fn get(name: String, path: String, status: u16) -> Shape {
        Shape {
            name,
            method: "GET",
            path,
            body: None,
            content_type: "application/json",
            status,
        }
    }

    fn post(name: String, path: &str, body: String, content_type: &'static str) -> Shape {
        Shape {
            name,
            method: "POST",
            path: path.to_owned(),
            body: Some(body),
            content_type,
            status: 200,
        }
    }

    /// `GET /bench/hello`: the smallest request there is.
    pub(crate) fn hello() -> Shape {
        Shape::get("sayHello".to_owned(), "/bench/hello".to_owned(), 200)
    }

    /// `GET /bench/static/{size}`: a fixed body of `size` bytes.
    pub(crate) fn static_body(size: usize) -> Shape {
        Shape::get(
            format!("static {}", size_text(size)),
            format!("/bench/static/{size}"),
            200,
        )
    }

    /// `GET` of a path no service routes: answered 404 with the JSON error body.
    pub(crate) fn unknown_path() -> Shape {
        Shape::get("bad URL (404)".to_owned(), UNKNOWN_PATH.to_owned(), 404)
    }

    /// `POST /bench/bytes` with `n` bytes (read and discarded; the answer is their count).
    pub(crate) fn send_bytes(n: usize) -> Shape {
        Shape::post(
            format!("send {n} bytes"),
            "/bench/bytes",
            "x".repeat(n),
            "application/octet-stream",
        )
    }

    /// `GET /bench/bytes/{n}`: `n` pseudo-random bytes.
    pub(crate) fn get_bytes(n: usize) -> Shape {
        Shape::get(format!("get {n} bytes"), format!("/bench/bytes/{n}"), 200)
    }

    /// `POST /bench/strings` with a JSON array of `count` strings (the answer is their count).
    pub(crate) fn send_strings(count: usize) -> Shape {
        Shape::post(
            format!("send {count} strings"),
            "/bench/strings",
            strings_json(count),
            "application/json",
        )
    }

    /// `POST /bench/strings/reverse` with `count` strings (the answer is the array reversed).
    pub(crate) fn reverse_strings(count: usize) -> Shape {
        Shape::post(
            format!("send and get {count} strings reversed"),
            "/bench/strings/reverse",
            strings_json(count),
            "application/json",
        )
    }

    /// `GET /health`: the probe's request.
    pub(crate) fn health() -> Shape {
        Shape::get("GET /health".to_owned(), "/health".to_owned(), 200)
    }

    /// The shape as a one-request scenario (its status expected, its body a literal).
    pub(crate) fn scenario_toml(&self) -> String {
        let mut out = String::new();
        let slug: String = self
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let _ = writeln!(out, "name = {:?}", format!("study-{slug}"));
        let _ = writeln!(out, "description = {:?}", self.name);
        let _ = writeln!(out, "\n[[request]]");
        let _ = writeln!(out, "name = {:?}", self.name);
        let _ = writeln!(out, "method = {:?}", self.method);
        let _ = writeln!(out, "path = {:?}", self.path);
        let _ = writeln!(out, "expect = [{}]", self.status);
        if let Some(body) = &self.body {
            let _ = writeln!(
                out,
                "headers = {{ content-type = {:?} }}",
                self.content_type
            );
            // A TOML literal string: no escapes, and the bodies hold no single quote.
            let _ = writeln!(out, "body = '{body}'");
        }
        out
    }

    /// The shape as a scenario.
    pub(crate) fn scenario(&self) -> Result<Scenario> {
        Scenario::parse(&self.scenario_toml(), &self.name)
            .with_context(|| format!("the study's request shape {:?}", self.name))
    }
}

/// `["s000000000","s000000001",...]`: `count` strings of ten characters.
pub(crate) fn strings_json(count: usize) -> String {
    let strings: Vec<String> = (0..count).map(|i| format!("s{i:09}")).collect();
    serde_json::to_string(&strings).unwrap_or_default()
}

/// `256 B`, `2 KiB`, `512 KiB`.
pub(crate) fn size_text(bytes: usize) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_is_a_one_request_scenario_naming_no_service() {
        for shape in [
            Shape::hello(),
            Shape::static_body(2048),
            Shape::unknown_path(),
            Shape::send_bytes(1000),
            Shape::get_bytes(1000),
            Shape::send_strings(50),
            Shape::reverse_strings(50),
            Shape::health(),
        ] {
            let scenario = shape.scenario().unwrap();
            assert_eq!(scenario.requests().len(), 1, "{}", shape.name);
            let request = &scenario.requests()[0];
            assert_eq!(request.method.as_str(), shape.method);
            assert!(request.expects(shape.status) && !request.expects(500));
            assert_eq!(
                scenario.services(),
                [brigade_load::scenario::DEFAULT_SERVICE]
            );
        }
    }

    #[test]
    fn bodies_have_the_asked_sizes() {
        assert_eq!(Shape::send_bytes(100_000).body.unwrap().len(), 100_000);
        let strings: Vec<String> =
            serde_json::from_str(&Shape::send_strings(5000).body.unwrap()).unwrap();
        assert_eq!(strings.len(), 5000);
        assert!(strings.iter().all(|s| s.len() == 10));
        assert_eq!(size_text(2048), "2 KiB");
        assert_eq!(size_text(256), "256 B");
    }
}
