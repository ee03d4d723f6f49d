//! The plain records Brigade's measurements produce and its reports carry, in a crate of their own
//! so that what renders them (`brigade-report`) depends on nothing that measures: a CPU split
//! between servers and generator ([`cpus`]), a process's `/proc` series and what it comes to over
//! a window ([`proc`]), one run's CPU figures ([`runcpu`]), side-by-side levels window by window
//! ([`side`]), how a server process ended ([`stop`]); the generator's result, the JSON contract
//! every run writes ([`result`], with its latency [`histogram`]s and the [`shard`] it was), the
//! thresholds and SLO expressions judged on it ([`threshold`]), the [`protocol`] a client speaks,
//! and how their numbers print ([`number`]). Plain data with the arithmetic that reads it; no
//! clock, nothing started, no I/O but reading a record file back ([`files`]).

pub mod cpus;
pub mod files;
pub mod histogram;
pub mod number;
pub mod proc;
pub mod protocol;
pub mod result;
pub mod runcpu;
pub mod shard;
pub mod side;
pub mod stop;
pub mod threshold;
