//! The plain records Brigade's measurements produce and its reports carry, in a crate of their own
//! so that what renders them (`brigade-report`) depends on nothing that measures: a CPU split
//! between servers and generator ([`cpus`]), a process's `/proc` series and what it comes to over
//! a window ([`proc`]), one run's CPU figures ([`runcpu`]), side-by-side levels window by window
//! ([`side`]), how a server process ended ([`stop`]). Plain data with the arithmetic that reads
//! it; no I/O, no clock, nothing started.

pub mod cpus;
pub mod proc;
pub mod runcpu;
pub mod side;
pub mod stop;
