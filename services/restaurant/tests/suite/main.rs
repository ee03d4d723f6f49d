//! `brigade-restaurant`' integration tests, one binary (zero2prod's `tests/api/main.rs`): every
//! test binary links its crate and its dependencies, and on CI's two cores each costs its own
//! link. Each module is one former test file; `cargo test -p brigade-restaurant --test suite
//! <module>` runs one.
//!
//! No test here measures: [`peers`] bounds a timeout with a second of slack, and [`hostile`]'s
//! cases are judged on their answers alone, so the modules' tests may run beside each other.

mod hostile;
mod peers;
mod scenarios;
