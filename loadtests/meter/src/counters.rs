//! The counters a side-by-side window set reads from the kernel: each server's CPU time in
//! nanoseconds, its user/system split, and its syscalls and context switches.
//!
//! - **CPU time**: the process's CPU-time clock (`clock_getcpuclockid(pid)` read with
//!   `clock_gettime`). It is the kernel's own nanosecond sum over every thread of the process,
//!   those that have exited included, and needs no root. `/proc/PID/stat` counts in 10 ms ticks,
//!   too coarse for 1-second windows (measured: ±2.2% A/A against ±0.4% with nanoseconds);
//!   `/proc/PID/task/*/schedstat` is in nanoseconds but loses threads that exit (a tokio
//!   blocking-pool thread that retires mid-window takes its time with it). For a server compare
//!   did not start but can see (a container on this machine), its cgroups' CPU accounting:
//!   `cpuacct.usage` on cgroup v1 (nanoseconds), `cpu.stat`'s `usage_usec` on v2 ([`CpuClock`]).
//! - **User and system CPU**: `/proc/PID/stat`'s ticks over the whole window set (tens of seconds,
//!   so a tick is a fraction of a percent), scaled to the nanosecond total.
//! - **Syscalls and context switches**: exact counts from the kernel's tracepoint
//!   `raw_syscalls:sys_enter` and software event `context-switches`, through `perf stat -p PID`
//!   over extra windows after the measured ones: counting adds a little cost per syscall, which
//!   differs between runtimes, so the CPU windows are never the counted ones. `perf stat -p`
//!   follows the threads alive when it attaches; threads born later are not counted, and the row
//!   says so when that happened. Without `perf` or the permission the columns say why.

use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use nix::time::{clock_getcpuclockid, clock_gettime, ClockId};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// Where a server's CPU time is read, in nanoseconds: its process's CPU-time clock, or the CPU
/// accounting of the cgroups it runs in (a container's, for servers compare did not start).
#[derive(Debug, Clone)]
pub enum CpuClock {
    /// A local process: nanoseconds of CPU used by all of its threads, living or exited.
    Process {
        /// The process.
        pid: u32,
        /// Its CPU-time clock.
        clock: ClockId,
    },
    /// One or more cgroups (a runtime's service containers), summed: cgroup v1's
    /// `cpuacct.usage` (nanoseconds), v2's `cpu.stat` `usage_usec`. Every process in them is
    /// counted, those that exited included; the kernel's network work done in softirq on behalf
    /// of a container is in no cgroup (see [`brigade_records::side::SideCell::interrupts_us_per_request`]).
    Cgroups(Vec<String>),
}

impl CpuClock {
    /// The CPU-time clock of process `pid`.
    pub fn of(pid: u32) -> anyhow::Result<CpuClock> {
        let clock = clock_getcpuclockid(Pid::from_raw(pid as i32))
            .with_context(|| format!("Failed to get the CPU-time clock of process {pid}"))?;
        Ok(CpuClock::Process { pid, clock })
    }

    /// The summed CPU accounting of `paths` (as `/proc/PID/cgroup` or podman's
    /// `.State.CgroupPath` give them); checked readable now.
    pub fn of_cgroups(paths: &[String]) -> anyhow::Result<CpuClock> {
        if paths.is_empty() {
            bail!("no cgroup to read CPU time from");
        }
        let clock = CpuClock::Cgroups(paths.to_vec());
        clock.read_ns()?;
        Ok(clock)
    }

    /// The CPU time used so far, nanoseconds.
    pub fn read_ns(&self) -> anyhow::Result<u64> {
        match self {
            CpuClock::Process { clock, .. } => {
                let t = clock_gettime(*clock).context("Failed to read a CPU-time clock")?;
                Ok(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
            }
            CpuClock::Cgroups(paths) => paths.iter().map(|p| cgroup_cpu_ns(p)).sum(),
        }
    }

    /// The user and system split so far (ticks of a process; a cgroup's own units: only their
    /// ratio is used).
    pub fn ticks(&self) -> anyhow::Result<Ticks> {
        match self {
            CpuClock::Process { pid, .. } => ticks(*pid),
            CpuClock::Cgroups(paths) => {
                let mut sum = Ticks::default();
                for path in paths {
                    let t = cgroup_ticks(path)?;
                    sum.user += t.user;
                    sum.system += t.system;
                }
                Ok(sum)
            }
        }
    }

    /// The processes counted now (a cgroup's members), for `perf stat -p`.
    pub fn pids(&self) -> Vec<u32> {
        match self {
            CpuClock::Process { pid, .. } => vec![*pid],
            CpuClock::Cgroups(paths) => {
                let mut pids: Vec<u32> = paths
                    .iter()
                    .filter_map(|p| read_cgroup_file(p, "cpuacct", "cgroup.procs").ok())
                    .flat_map(|text| {
                        text.lines()
                            .filter_map(|l| l.trim().parse().ok())
                            .collect::<Vec<u32>>()
                    })
                    .collect();
                pids.sort_unstable();
                pids
            }
        }
    }

    /// The threads counted now, for telling whether new ones were born while counting.
    pub fn threads(&self) -> Vec<u32> {
        let mut tids: Vec<u32> = self.pids().into_iter().flat_map(threads).collect();
        tids.sort_unstable();
        tids
    }
}

/// Reads `file` of the cgroup at `path`: under `/sys/fs/cgroup` on cgroup v2, under the v1
/// controller `controller`'s hierarchy otherwise.
pub(crate) fn read_cgroup_file(path: &str, controller: &str, file: &str) -> anyhow::Result<String> {
    let root = std::path::Path::new("/sys/fs/cgroup");
    let relative = path.trim_start_matches('/');
    let full = if root.join("cgroup.controllers").exists() {
        root.join(relative).join(file)
    } else {
        root.join(controller).join(relative).join(file)
    };
    std::fs::read_to_string(&full).with_context(|| format!("Failed to read {}", full.display()))
}

/// The value of `key` in a cgroup's `KEY VALUE` lines.
fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// A cgroup's CPU time so far, nanoseconds.
pub(crate) fn cgroup_cpu_ns(path: &str) -> anyhow::Result<u64> {
    if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        let stat = read_cgroup_file(path, "cpu", "cpu.stat")?;
        let usec = keyed(&stat, "usage_usec").with_context(|| format!("{path}: no usage_usec"))?;
        return Ok(usec * 1_000);
    }
    let text = read_cgroup_file(path, "cpuacct", "cpuacct.usage")?;
    text.trim()
        .parse()
        .with_context(|| format!("{path}: cpuacct.usage is not a number: {text:?}"))
}

/// A cgroup's user and system CPU so far: v1's `cpuacct.stat` ticks, v2's microseconds.
fn cgroup_ticks(path: &str) -> anyhow::Result<Ticks> {
    let (text, user, system) = if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
    {
        (
            read_cgroup_file(path, "cpu", "cpu.stat")?,
            "user_usec",
            "system_usec",
        )
    } else {
        (
            read_cgroup_file(path, "cpuacct", "cpuacct.stat")?,
            "user",
            "system",
        )
    };
    Ok(Ticks {
        user: keyed(&text, user).with_context(|| format!("{path}: no {user}"))?,
        system: keyed(&text, system).with_context(|| format!("{path}: no {system}"))?,
    })
}

/// User and system CPU ticks of a process (`/proc/PID/stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Ticks {
    /// User-mode ticks.
    pub user: u64,
    /// Kernel-mode ticks.
    pub system: u64,
}

/// Reads the user and system ticks of `pid`.
pub fn ticks(pid: u32) -> anyhow::Result<Ticks> {
    let stat = procfs::process::Process::new(pid as i32)
        .and_then(|p| p.stat())
        .with_context(|| format!("Failed to read /proc/{pid}/stat"))?;
    Ok(Ticks {
        user: stat.utime,
        system: stat.stime,
    })
}

/// The thread ids of `pid` now.
pub fn threads(pid: u32) -> Vec<u32> {
    let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    tids.sort_unstable();
    tids
}

/// Exact event counts of one process over a counting window, from `perf stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct EventCounts {
    /// Syscalls entered (`raw_syscalls:sys_enter`).
    pub syscalls: u64,
    /// Context switches (`context-switches`).
    pub context_switches: u64,
}

/// A `perf stat` counting one process, started and not yet finished.
#[derive(Debug)]
pub struct Counting {
    child: std::process::Child,
}

/// Starts counting syscalls and context switches of the processes `pids` together for `seconds`
/// with `perf stat`.
pub fn start_counting(pids: &[u32], seconds: f64) -> anyhow::Result<Counting> {
    if pids.is_empty() {
        bail!("no process to count");
    }
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    let child = Command::new("perf")
        .args([
            "stat",
            "-x",
            ",",
            "-e",
            "raw_syscalls:sys_enter,context-switches",
            "-p",
            &list.join(","),
            "--",
            "sleep",
            &format!("{seconds:.3}"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("perf is not installed (Debian: linux-perf)")?;
    Ok(Counting { child })
}

impl Counting {
    /// Waits for the count and reads it.
    pub fn finish(self) -> anyhow::Result<EventCounts> {
        let out = self
            .child
            .wait_with_output()
            .context("Failed to wait for perf")?;
        let text = String::from_utf8_lossy(&out.stderr);
        parse_perf_stat(&text)
    }
}

/// Parses `perf stat -x ,` output: `COUNT,UNIT,EVENT,...` lines.
pub fn parse_perf_stat(text: &str) -> anyhow::Result<EventCounts> {
    let mut counts = EventCounts::default();
    let mut found = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() < 3 {
            continue;
        }
        let Ok(count) = fields[0].trim().parse::<u64>() else {
            // `<not supported>` or `<not counted>`: the event is missing here.
            continue;
        };
        match fields[2].trim() {
            "raw_syscalls:sys_enter" => counts.syscalls = count,
            "context-switches" | "cs" => counts.context_switches = count,
            _ => continue,
        }
        found += 1;
    }
    if found < 2 {
        let first = text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        bail!("perf stat counted nothing (needs root or kernel.perf_event_paranoid <= -1 for tracepoints): {first}");
    }
    Ok(counts)
}

/// How long to wait for a count beyond its window.
pub const COUNT_SLACK: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_stat_lines_give_both_counts_and_missing_events_are_an_error() {
        let text = "10654,,raw_syscalls:sys_enter,143057002,100.00,,\n148,,context-switches,143057002,100.00,,\n";
        assert_eq!(
            parse_perf_stat(text).unwrap(),
            EventCounts {
                syscalls: 10654,
                context_switches: 148
            }
        );
        let refused =
            "<not supported>,,raw_syscalls:sys_enter,0,100.00,,\n3,,context-switches,1,100.00,,\n";
        assert!(parse_perf_stat(refused).is_err());
        assert!(parse_perf_stat("").is_err());
    }

    #[test]
    fn this_process_cpu_clock_grows_with_work_in_nanoseconds() {
        let clock = CpuClock::of(std::process::id()).unwrap();
        let before = clock.read_ns().unwrap();
        let mut x = 0u64;
        for i in 0..3_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        let after = clock.read_ns().unwrap();
        assert!(after > before, "{after} <= {before}");
        assert!(!threads(std::process::id()).is_empty());
        assert!(ticks(std::process::id()).is_ok());
    }
}
