//! The bookmarks example's integration tests, one binary (zero2prod's `tests/api/main.rs`): every
//! test binary links its crate and its dependencies, and on CI's two cores each costs its own
//! link. Each module is one former test file; `cargo test -p bookmarks --test suite <module>`
//! runs one.
//!
//! [`compare`] runs `brigade compare --quick` but asserts no figure beyond "requests were
//! answered", so it may run beside the other modules' tests.

mod binary;
mod compare;
mod conformance;
