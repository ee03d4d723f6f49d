//! `brigade-compare`'s integration tests, one binary (zero2prod's `tests/api/main.rs`): every
//! test binary links its crate and its dependencies, and on CI's two cores each costs its own
//! link. Each module is one former test file.
//!
//! `tests/contract.rs` stays a binary of its own: it is also the fake server its tests start (its
//! own `main` answers `serve` and `runtimes`), which a libtest binary cannot be.
//!
//! No test here measures a server: [`compare_procstat`]'s children are compared with each other
//! and with their CPUs, the others are pure, so the modules' tests may run beside each other.

mod compare_procstat;
mod compare_report;
mod compare_verdict;
