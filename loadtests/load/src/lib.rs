//! The load generator: sends a scenario's requests to HTTP targets and measures what comes back.
//!
//! A scenario is data (a TOML file); it runs closed or open loop and reports hits/s, bytes/s,
//! latency percentiles from HdrHistograms and errors by kind, per route and in total. It knows no
//! application: scenarios name services, targets are URLs, and an application registers its own
//! scenarios and default targets in a [`Registry`].
//!
//! As a library: [`run`] a [`Scenario`] under a [`LoadConfig`] and read the [`LoadResult`].
//!
//! Its jobs, one a module:
//! - [`scenario`]: scenarios as data — parsing, templates, pools of captured values, rehearsal;
//!   [`registry`]: the scenarios and default targets an application knows by name;
//! - [`engine`]: the run — generator threads on their own runtimes, closed and open loop, setup
//!   steps, per-thread statistics merged at the end; `engine::session` sends one request at a time;
//! - [`table`] prints a result and [`machine`] describes where it ran;
//! - [`shard`]: one run split over many generators (fixtures made once, a shard of the users each);
//! - [`abuse`]: abusive clients (slowloris heads, idle keep-alives, unfinished bodies, connection
//!   floods) that check a server's limits close what they should;
//! - [`stalls`]: the timers that probe the machine's own pauses before a capacity search;
//! - [`cli`], [`args`] and [`parse`]: `brigade load` (with `--slo`, the capacity search driven step
//!   by step against one running server) and `brigade merge`.
//!
//! What it does not hold: the result every run writes (the JSON contract), its latency histograms,
//! thresholds and SLO expressions, and the protocols are plain records in `brigade-records`
//! (`LoadResult` is re-exported here for library users: this crate is a facade for it); the
//! protocol clients (HTTP/1.1, TLS, HTTP/2, HTTP/3) are `brigade-clients`, which knows no scenario;
//! the capacity search's state machine is `brigade-slo`, which runs nothing. The comparison of
//! runtimes and its reports live in `brigade-compare`, the studies in `brigade-studies`.

pub mod abuse;
pub mod args;
pub mod cli;
pub mod engine;
pub mod machine;
pub mod parse;
pub mod registry;
pub mod scenario;
pub mod shard;
pub mod stalls;
pub mod table;

pub use brigade_records::result::LoadResult;
pub use engine::{run, LoadConfig};
pub use registry::Registry;
pub use scenario::Scenario;
