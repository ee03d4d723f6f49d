//! Brigade's measurement core, on the `brigade-load` generator: what every measured thing in
//! Brigade (compare, the studies, the SLO search) is made of.
//!
//! - [`servers`]: starting any server binary that speaks the contract (standard serve flags or a
//!   command template, JSON announcements, `/ready`), on free ports, and stopping it.
//! - [`pin`]: splitting the CPUs between servers and generator, and pinning to them.
//! - [`procstat`]: sampling processes, cgroups and CPUs from `/proc` during a run.
//! - [`counters`]: the kernel's exact counters: a process's CPU-time clock (ns), user/system
//!   ticks, syscalls and context switches through `perf stat`.
//! - [`runcpu`]: whether a run shows the servers at all (generator-bound, contended).
//! - [`isolated`]: one isolated run, sampled around.
//! - [`window`]: one side-by-side window set over servers already running.
//! - [`wire`]: the protocol a measurement speaks, the servers' flags and the loads' settings.
//! - [`tally`]: what servers Brigade did not start counted, against what the generators sent.

pub mod clock;
pub mod counters;
pub mod isolated;
pub mod order;
pub mod pin;
pub mod procstat;
pub mod runcpu;
pub mod servers;
pub mod tally;
pub mod window;
pub mod wire;
