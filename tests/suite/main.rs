//! The `brigade` crate's integration tests, one binary (zero2prod's `tests/api/main.rs`): every
//! test binary links the whole workspace, and on CI's two cores nine of them cost minutes of
//! linking. Each module is one former test file; `cargo test --test suite <module>` runs one.
//!
//! The tests of all modules now run in one process and in parallel, so those that measure take
//! [`measuring::alone`] first.

mod capacity;
mod compare_e2e;
mod conformance;
mod containers;
mod correctness;
mod doc_counts;
mod flags;
mod imports;
mod measuring;
mod mongo_outage;
mod no_domain_words;
mod plan;
mod process;
mod registry;
mod structure;
