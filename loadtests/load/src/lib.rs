//! The load generator: sends a scenario's requests to HTTP targets and measures what comes back.
//!
//! A scenario is data (a TOML file); it runs closed or open loop and reports hits/s, bytes/s,
//! latency percentiles from HdrHistograms and errors by kind, per route and in total. It knows no
//! application: scenarios name services, targets are URLs, and an application registers its own
//! scenarios and default targets in a [`registry::Registry`].
//!
//! A user's crate can depend on it alone; the comparison of runtimes and its reports live in
//! `brigade-compare`, the studies in `brigade-studies`, both built on it.

pub mod abuse;
pub mod args;
pub mod cli;
pub mod engine;
pub mod files;
pub mod histogram;
pub mod machine;
pub mod parse;
pub mod protocol;
pub mod registry;
pub mod result;
pub mod scenario;
pub mod shard;
pub mod slo;
pub mod table;
pub mod threshold;

pub use registry::Registry;
