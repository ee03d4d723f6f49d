//! CPU affinity: split the machine's CPUs between the servers and the generator, pin the generator's
//! threads, and start server processes already pinned.
//!
//! A child process inherits the CPU mask of the thread that forks it, so a server is started from a
//! short-lived thread that first narrows its own mask to the server CPUs: the server is pinned from
//! its first instruction, with no window in which its worker threads could start elsewhere, and
//! without `unsafe` `pre_exec` hooks or an external `taskset`.

use std::process::{Child, Command};

use anyhow::{bail, Context};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// Which CPUs the servers and the generator use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlan {
    /// CPUs the server processes run on.
    pub server: Vec<usize>,
    /// CPUs the generator's threads run on.
    pub generator: Vec<usize>,
    /// Whether the two sets are pinned and disjoint (false: both share every CPU).
    pub pinned: bool,
    /// A sentence saying how and why the CPUs were split.
    pub note: String,
}

impl CpuPlan {
    /// Chooses the split for the CPUs this process may use.
    ///
    /// With one CPU nothing can be separated, so nothing is pinned. Otherwise the generator gets
    /// the upper half (rounded down) and the servers the rest: 2 CPUs → server 0, generator 1;
    /// 3 → 0-1 / 2; 8 → 0-3 / 4-7. A server is the thing measured, so it gets the odd CPU.
    pub fn split(available: &[usize]) -> CpuPlan {
        let mut cpus = available.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.len() < 2 {
            return CpuPlan {
                server: cpus.clone(),
                generator: cpus.clone(),
                pinned: false,
                note: format!(
                    "{} CPU available: servers and generator share it, nothing pinned",
                    cpus.len()
                ),
            };
        }
        let generator_count = cpus.len() / 2;
        let generator = cpus.split_off(cpus.len() - generator_count);
        CpuPlan {
            note: format!(
                "servers pinned to CPU {}, generator to CPU {} (disjoint)",
                list(&cpus),
                list(&generator)
            ),
            server: cpus,
            generator,
            pinned: true,
        }
    }

    /// A plan from explicit CPU lists, checked to be available and disjoint.
    pub fn explicit(
        available: &[usize],
        server: &[usize],
        generator: &[usize],
    ) -> anyhow::Result<CpuPlan> {
        for cpu in server.iter().chain(generator) {
            if !available.contains(cpu) {
                bail!(
                    "CPU {cpu} is not available to this process (available: {})",
                    list(available)
                );
            }
        }
        if server.is_empty() || generator.is_empty() {
            bail!("both --server-cpus and --generator-cpus need at least one CPU");
        }
        if server.iter().any(|cpu| generator.contains(cpu)) {
            bail!("--server-cpus and --generator-cpus overlap");
        }
        Ok(CpuPlan {
            note: format!(
                "servers pinned to CPU {}, generator to CPU {} (as asked)",
                list(server),
                list(generator)
            ),
            server: server.to_vec(),
            generator: generator.to_vec(),
            pinned: true,
        })
    }

    /// A plan that pins nothing: both sides may use every available CPU.
    pub fn unpinned(available: &[usize]) -> CpuPlan {
        CpuPlan {
            server: available.to_vec(),
            generator: available.to_vec(),
            pinned: false,
            note: format!(
                "nothing pinned (asked): servers and generator share CPU {}",
                list(available)
            ),
        }
    }

    /// The CPUs to hand the server, or `None` when nothing is pinned.
    pub fn server_mask(&self) -> Option<&[usize]> {
        self.pinned.then_some(self.server.as_slice())
    }

    /// The CPUs to hand the generator, or `None` when nothing is pinned.
    pub fn generator_mask(&self) -> Option<&[usize]> {
        self.pinned.then_some(self.generator.as_slice())
    }
}

/// Writes a CPU list the way the kernel does: `0-3,6`.
pub fn list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Parses a CPU list such as `0-3,6`.
pub fn parse_list(text: &str) -> anyhow::Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (
                    a.trim()
                        .parse()
                        .with_context(|| format!("bad CPU number in {part:?}"))?,
                    b.trim()
                        .parse()
                        .with_context(|| format!("bad CPU number in {part:?}"))?,
                );
                if b < a {
                    bail!("bad CPU range {part:?}");
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(
                part.parse()
                    .with_context(|| format!("bad CPU number {part:?}"))?,
            ),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

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
