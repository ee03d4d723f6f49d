//! CPU affinity: split the machine's CPUs between the servers and the generator, pin the generator's
//! threads, and start server processes already pinned.
//!
//! A child process inherits the CPU mask of the thread that forks it, so a server is started from a
//! short-lived thread that first narrows its own mask to the server CPUs: the server is pinned from
//! its first instruction, with no window in which its worker threads could start elsewhere, and
//! without `unsafe` `pre_exec` hooks or an external `taskset`.

use std::process::{Child, Command};

use anyhow::{bail, Context};
use brigade_records::cpus::{list, parse_list, CpuPlan};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The CPUs the calling thread may run on.
pub fn available_cpus() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Restricts the calling thread (and the threads and processes it starts later) to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> anyhow::Result<()> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu)
            .with_context(|| format!("CPU {cpu} is out of range"))?;
    }
    sched_setaffinity(Pid::from_raw(0), &set)
        .with_context(|| format!("Failed to pin to CPU {}", list(cpus)))
}

/// The calling thread's CPUs, given back to it when dropped: a comparison or study run as a
/// library call leaves its caller's thread as it found it.
#[derive(Debug)]
pub struct Unpin {
    cpus: Vec<usize>,
}

impl Unpin {
    /// Remembers the calling thread's CPUs now.
    pub fn remember() -> Unpin {
        Unpin {
            cpus: available_cpus(),
        }
    }
}

impl Drop for Unpin {
    fn drop(&mut self) {
        let _ = pin_current_thread(&self.cpus);
    }
}

/// Spawns `command`, pinned to `cpus` from the start when given.
pub fn spawn_pinned(command: &mut Command, cpus: Option<&[usize]>) -> anyhow::Result<Child> {
    let Some(cpus) = cpus else {
        return command
            .spawn()
            .context("Failed to start the server process");
    };
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                pin_current_thread(cpus)?;
                command
                    .spawn()
                    .context("Failed to start the server process")
            })
            .join()
            .unwrap_or_else(|_| bail!("the thread starting the server panicked"))
    })
}

/// How the CPUs are split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuChoice {
    /// Half and half (see [`CpuPlan::split`]).
    Auto,
    /// Nothing pinned.
    NoPin,
    /// These CPUs for the servers, those for the generator.
    Explicit {
        /// Server CPUs.
        server: Vec<usize>,
        /// Generator CPUs.
        generator: Vec<usize>,
    },
}

impl CpuChoice {
    /// The CPU split this choice makes of the `available` CPUs.
    pub fn plan(&self, available: &[usize]) -> anyhow::Result<CpuPlan> {
        Ok(match self {
            CpuChoice::Auto => CpuPlan::split(available),
            CpuChoice::NoPin => CpuPlan::unpinned(available),
            CpuChoice::Explicit { server, generator } => {
                CpuPlan::explicit(available, server, generator)?
            }
        })
    }
}

/// The CPU flags every command that starts servers takes (`compare` and the studies).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CpuArgs {
    /// Pin nothing: servers and generator share every CPU
    #[arg(long, conflicts_with_all = ["server_cpus", "generator_cpus"])]
    pub no_pin: bool,
    /// CPUs for the servers, e.g. 0-3 (with --generator-cpus)
    #[arg(long, requires = "generator_cpus")]
    pub server_cpus: Option<String>,
    /// CPUs for the generator, e.g. 4-7 (with --server-cpus)
    #[arg(long, requires = "server_cpus")]
    pub generator_cpus: Option<String>,
}

impl CpuArgs {
    /// The choice these flags make.
    pub fn choice(&self) -> anyhow::Result<CpuChoice> {
        Ok(
            match (self.server_cpus.as_deref(), self.generator_cpus.as_deref()) {
                (Some(server), Some(generator)) => CpuChoice::Explicit {
                    server: parse_list(server)?,
                    generator: parse_list(generator)?,
                },
                _ if self.no_pin => CpuChoice::NoPin,
                _ => CpuChoice::Auto,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cpus_give_the_server_cpu_0_and_the_generator_cpu_1() {
        let plan = CpuPlan::split(&[0, 1]);
        assert_eq!(
            (plan.server.as_slice(), plan.generator.as_slice()),
            (&[0][..], &[1][..])
        );
        assert!(plan.pinned);
    }

    #[test]
    fn an_odd_count_gives_the_server_the_extra_cpu() {
        let plan = CpuPlan::split(&[0, 1, 2]);
        assert_eq!(plan.server, vec![0, 1]);
        assert_eq!(plan.generator, vec![2]);
    }

    #[test]
    fn one_cpu_pins_nothing() {
        let plan = CpuPlan::split(&[3]);
        assert!(!plan.pinned);
        assert_eq!(plan.server_mask(), None);
    }

    #[test]
    fn explicit_plans_must_be_disjoint_and_available() {
        assert!(CpuPlan::explicit(&[0, 1, 2, 3], &[0, 1], &[1, 2]).is_err());
        assert!(CpuPlan::explicit(&[0, 1], &[0], &[5]).is_err());
        assert!(CpuPlan::explicit(&[0, 1], &[0], &[1]).is_ok());
    }

    #[test]
    fn cpu_lists_round_trip() {
        let cpus = parse_list("0-3, 6,8-9").unwrap();
        assert_eq!(cpus, vec![0, 1, 2, 3, 6, 8, 9]);
        assert_eq!(list(&cpus), "0-3,6,8-9");
        assert!(parse_list("3-1").is_err());
    }
}
