//! Whether a measured run shows the servers at all: generator-bound (the generator's CPUs had no
//! headroom, so the figures may show its limit) or contended (other processes took a share of a
//! side's CPUs), from the CPU figures sampled around it.

use serde::{Deserialize, Serialize};

use brigade_records::proc::CpuBusy;

/// The generator counts as saturated at this share of its CPUs.
use brigade_records::result::GENERATOR_SATURATED;
use brigade_records::runcpu::{RunCpu, CONTENTION};

/// The server has headroom below this share of its CPUs (said in a generator-bound run's reason).
pub const SERVER_HEADROOM: f64 = 0.90;

/// How the CPUs were shared between the servers and the generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuShape {
    /// CPUs the generator may use.
    pub generator_cpus: usize,
    /// CPUs the server may use.
    pub server_cpus: usize,
    /// Whether the two are pinned to disjoint CPUs (false: they share all of them).
    pub pinned: bool,
}

/// Busy share of the generator's CPUs (its own figure if the CPUs were not sampled).
fn generator_busy(run: &RunCpu, shape: CpuShape) -> f64 {
    run.generator_cpus.busy_percent.max(run.generator_process)
        / capacity(run.generator_cpus, shape.generator_cpus)
}

/// Busy share of the server's CPUs (its own figure if the CPUs were not sampled).
fn server_busy(run: &RunCpu, shape: CpuShape) -> f64 {
    run.server_cpus.busy_percent.max(run.server_process)
        / capacity(run.server_cpus, shape.server_cpus)
}

fn capacity(busy: CpuBusy, cpus: usize) -> f64 {
    if busy.capacity_percent > 0.0 {
        busy.capacity_percent
    } else {
        cpus.max(1) as f64 * 100.0
    }
}

/// Why a run counts as generator-bound, or `None` if it does not.
///
/// Pinned: the generator's CPUs were at least 90% busy — by the generator, by the kernel's work
/// sending its traffic, or by anything else that starved it. With no headroom on the generator's
/// side the run cannot show what the server could do, whether or not the server's CPUs were full
/// too, so the run names no winner either way. Sharing CPUs: they were at least 90% busy and the
/// generator used more of them than the server.
pub fn generator_bound(run: &RunCpu, shape: CpuShape) -> Option<String> {
    let generator = generator_busy(run, shape);
    let server = server_busy(run, shape);
    if shape.pinned {
        (generator >= GENERATOR_SATURATED).then(|| {
            let server_side = if server < SERVER_HEADROOM {
                "while the server's had headroom"
            } else {
                "and the server's were full too, so either side may be the limit"
            };
            format!(
                "the generator's CPUs were {:.0}% busy (the generator itself {:.0}% of a core) \
                 {server_side} ({:.0}% busy, the server itself {:.0}%)",
                generator * 100.0,
                run.generator_process,
                server * 100.0,
                run.server_process
            )
        })
    } else {
        (server >= GENERATOR_SATURATED && run.generator_process >= run.server_process).then(|| {
            format!(
                "the shared CPUs were {:.0}% busy and the generator ({:.0}% of a core) used more \
                 of them than the server ({:.0}%)",
                server * 100.0,
                run.generator_process,
                run.server_process
            )
        })
    }
}

/// Why a run counts as contended (other processes took at least 20% of the server's or the
/// generator's CPUs), or `None`.
///
/// Task time is compared, not interrupts: the kernel's network work for the run itself is
/// interrupt time that no process is charged with.
pub fn contended(run: &RunCpu, shape: CpuShape) -> Option<String> {
    if run.server_cpus.capacity_percent <= 0.0 {
        return None;
    }
    let sides: Vec<(&str, f64, f64)> = if shape.pinned {
        vec![
            (
                "server",
                run.server_cpus.task_percent - run.server_process - run.companions,
                run.server_cpus.capacity_percent,
            ),
            (
                "generator",
                run.generator_cpus.task_percent - run.generator_process,
                run.generator_cpus.capacity_percent,
            ),
        ]
    } else {
        vec![(
            "shared",
            run.server_cpus.task_percent
                - run.server_process
                - run.companions
                - run.generator_process,
            run.server_cpus.capacity_percent,
        )]
    };
    sides
        .into_iter()
        .find(|(_, others, cap)| *cap > 0.0 && *others >= CONTENTION * cap)
        .map(|(side, others, cap)| {
            format!(
                "other processes used {:.0}% of the {side} CPUs ({:.0}% of a core)",
                others / cap * 100.0,
                others
            )
        })
}
