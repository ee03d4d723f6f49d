//! `brigade-load`'s integration tests, one binary (zero2prod's `tests/api/main.rs`): every test
//! binary links its crate and its dependencies, and on CI's two cores each costs its own link.
//! Each module is one former test file; [`support`] is the generator tests' in-test server.
//!
//! No test here measures: the generator's assertions are on counts and the order of events
//! (see [`generator`]), so the modules' tests may run beside each other.

mod generator;
mod merging;
mod scenarios;
mod support;
