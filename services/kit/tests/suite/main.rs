//! `brigade-kit`'s integration tests, one binary (zero2prod's `tests/api/main.rs`): every test
//! binary links its crate and its dependencies, and on CI's two cores each costs its own link.
//! Each module is one former test file; `cargo test -p brigade-kit --test suite <module>` runs one.
//!
//! [`mongo_store`] needs the `testing` feature (MongoDB discovery). Cargo builds a package's
//! integration tests with that package's features as `cfg`s, so the module is left out without
//! it: `cargo test -p brigade-kit` still builds and runs the rest, and `--all-features` (or
//! `--features testing`) runs everything. It used to be a `required-features` binary of its own.

#[cfg(feature = "testing")]
mod mongo_store;
mod store_model;
