//! The W3C trace context (`traceparent: 00-<trace id>-<parent id>-<flags>`) that follows one request
//! across services: taken from the incoming header when it is valid, made fresh otherwise, kept for
//! the request's task ([`current`]), put on its span and log line, and sent on every peer call with a
//! new parent id ([`TraceContext::child_header`]).

use std::cell::Cell;
use std::fmt;
use std::hash::{BuildHasher, Hasher};

tokio::task_local! {
    static CURRENT: TraceContext;
}

/// A trace id and the flags a request came with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    /// The 16-byte trace id; never all zeros.
    pub trace_id: u128,
    /// The caller's span id (the header's parent id), if it sent one.
    pub parent_id: Option<u64>,
    /// The trace flags (`01`: sampled).
    pub flags: u8,
}

impl TraceContext {
    /// The context of a request that sent `traceparent` (if valid), or a fresh trace.
    pub fn from_header(traceparent: Option<&str>) -> TraceContext {
        traceparent
            .and_then(TraceContext::parse)
            .unwrap_or_else(TraceContext::fresh)
    }

    /// A new trace: a random trace id, no parent, sampled.
    pub fn fresh() -> TraceContext {
        let trace_id = loop {
            let id = (u128::from(random_u64()) << 64) | u128::from(random_u64());
            if id != 0 {
                break id;
            }
        };
        TraceContext {
            trace_id,
            parent_id: None,
            flags: 1,
        }
    }

    /// Parses a `traceparent` value as the W3C Trace Context spec reads it: version `00` is exactly
    /// 55 characters; a later version may carry more after a `-`; version `ff`, ids of all zeros,
    /// upper-case or non-hex digits make it invalid (`None`: the request starts a new trace).
    pub fn parse(header: &str) -> Option<TraceContext> {
        let h = header.trim();
        let b = h.as_bytes();
        if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let version = hex(&h[0..2])? as u8;
        if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
            return None;
        }
        let trace_id = hex(&h[3..35])?;
        let parent_id = hex(&h[36..52])? as u64;
        let flags = hex(&h[53..55])? as u8;
        (trace_id != 0 && parent_id != 0).then_some(TraceContext {
            trace_id,
            parent_id: Some(parent_id),
            flags,
        })
    }

    /// The `traceparent` to send on a call made on behalf of this request: the same trace id and
    /// flags, a new parent id.
    pub fn child_header(&self) -> String {
        let span = loop {
            let s = random_u64();
            if s != 0 {
                break s;
            }
        };
        format!("00-{:032x}-{span:016x}-{:02x}", self.trace_id, self.flags)
    }

    /// Runs `fut` with this context as the [`current`] one.
    pub fn scope<F: std::future::Future>(
        self,
        fut: F,
    ) -> impl std::future::Future<Output = F::Output> {
        CURRENT.scope(self, fut)
    }
}

impl fmt::Display for TraceContext {
    /// The trace id as 32 lower-case hex digits, as logged.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.trace_id)
    }
}

/// The trace context of the request this task is answering, if any.
pub fn current() -> Option<TraceContext> {
    CURRENT.try_with(|t| *t).ok()
}

/// Lower-case hex digits only (the spec forbids upper case), as a number.
fn hex(s: &str) -> Option<u128> {
    if !s
        .bytes()
        .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    {
        return None;
    }
    u128::from_str_radix(s, 16).ok()
}

thread_local! {
    static RNG: Cell<u64> = Cell::new({
        // Seeded once per thread from the OS-randomised keys std's hash maps use.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x5eed);
        h.finish() | 1
    });
}

/// A fast non-cryptographic random number (splitmix64): trace and span ids need to be unique, not
/// secret, and a request must not pay a system call for one.
fn random_u64() -> u64 {
    RNG.with(|s| {
        let mut z = s.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        s.set(z);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_header_keeps_its_trace_id_and_flags() {
        let t = TraceContext::from_header(Some(VALID));
        assert_eq!(t.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!((t.parent_id, t.flags), (Some(0x00f0_67aa_0ba9_02b7), 1));
        let child = t.child_header();
        assert!(
            child.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
            "{child}"
        );
        assert!(child.ends_with("-01") && child.len() == 55, "{child}");
        assert_ne!(&child[36..52], "00f067aa0ba902b7");
        assert_eq!(TraceContext::parse(&child).unwrap().trace_id, t.trace_id);
        // A later version may carry more fields.
        assert!(TraceContext::parse(&format!("01{}-extra", &VALID[2..])).is_some());
    }

    #[test]
    fn invalid_headers_start_a_fresh_trace() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad:?}");
        }
        let a = TraceContext::from_header(Some("garbage"));
        let b = TraceContext::from_header(None);
        assert_ne!(a.trace_id, b.trace_id);
        assert_eq!((a.parent_id, a.to_string().len()), (None, 32));
    }

    #[tokio::test]
    async fn the_context_is_current_inside_its_scope_only() {
        let t = TraceContext::fresh();
        assert_eq!(current(), None);
        let seen = t.scope(async { current() }).await;
        assert_eq!(seen, Some(t));
    }
}
