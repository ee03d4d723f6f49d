//! A CPU split between the servers and the generator, and CPU lists in words (`0-3,6`).

use anyhow::{bail, Context};
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
