//! The CPU figures of one measured run: the generator's and the server's processes, and their CPUs.

use serde::{Deserialize, Serialize};

use crate::proc::CpuBusy;

/// Other processes may use at most this share of a side's CPUs before a run counts as contended.
pub const CONTENTION: f64 = 0.20;

/// The CPU figures of one run, all in percent of one core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RunCpu {
    /// The generator process.
    pub generator_process: f64,
    /// The server process.
    pub server_process: f64,
    /// The generator's CPUs, whoever used them (the same CPUs as the server's when unpinned).
    pub generator_cpus: CpuBusy,
    /// The server's CPUs, whoever used them.
    pub server_cpus: CpuBusy,
    /// Processes that serve with the server on its CPUs, apart from it (an external server's
    /// databases, `--external-companion`): their use is the server side's own, not contention.
    #[serde(default)]
    pub companions: f64,
}
