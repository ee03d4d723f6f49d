//! CPU and memory of a running process, read from `/proc`: a one-off reading, and a background
//! sampler that records the servers (and the generator itself) while a run is measured.
//!
//! CPU is the process's user + system time summed over all its threads (`/proc/<pid>/stat`), so a
//! multi-threaded server at full tilt on two cores reads 200%. Memory is the resident set size; the
//! kernel's own high-water mark (`VmHWM`) is read once at the end of a server's life.
//!
//! The sampler also reads `/proc/stat` for the CPUs the servers and the generator are pinned to:
//! how busy those CPUs were, whoever used them. A process's own CPU figure cannot tell a server
//! that idles for want of load from one starved by other processes on a shared machine; the CPUs'
//! busy time can.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use brigade_records::proc::{CpuBusy, ProcSample, ProcSeries};
use serde::{Deserialize, Serialize};

/// One reading of a process: cumulative CPU seconds and resident memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcReading {
    /// User + system CPU seconds since the process started (all threads).
    pub cpu_s: f64,
    /// Resident set size now, KiB.
    pub rss_kib: u64,
}

/// Reads a process's CPU time and resident memory now.
pub fn read(pid: u32) -> anyhow::Result<ProcReading> {
    let process = procfs::process::Process::new(pid as i32)
        .with_context(|| format!("Failed to open /proc/{pid}"))?;
    let stat = process
        .stat()
        .with_context(|| format!("Failed to read /proc/{pid}/stat"))?;
    let ticks = procfs::ticks_per_second() as f64;
    Ok(ProcReading {
        cpu_s: (stat.utime + stat.stime) as f64 / ticks,
        rss_kib: stat.rss * procfs::page_size() / 1024,
    })
}

/// A cgroup's CPU time and memory now: cgroup v2's `cpu.stat` (`usage_usec`) and `memory.current`
/// under `/sys/fs/cgroup`, else v1's `cpuacct.usage` and `memory.usage_in_bytes` under their
/// controllers' hierarchies. Memory is the cgroup's charge, page cache included (not an RSS).
pub fn read_cgroup(path: &str) -> anyhow::Result<ProcReading> {
    use crate::counters::{cgroup_cpu_ns, read_cgroup_file};
    let v2 = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let file = if v2 {
        "memory.current"
    } else {
        "memory.usage_in_bytes"
    };
    let memory: u64 = read_cgroup_file(path, "memory", file)?.trim().parse()?;
    Ok(ProcReading {
        cpu_s: cgroup_cpu_ns(path)? as f64 / 1e9,
        rss_kib: memory / 1024,
    })
}

/// The most memory the process has had resident over its life (`VmHWM`), KiB.
pub fn peak_rss_kib(pid: u32) -> anyhow::Result<u64> {
    let process = procfs::process::Process::new(pid as i32)
        .with_context(|| format!("Failed to open /proc/{pid}"))?;
    let status = process
        .status()
        .with_context(|| format!("Failed to read /proc/{pid}/status"))?;
    status
        .vmhwm
        .with_context(|| format!("/proc/{pid}/status has no VmHWM"))
}

/// The CPUs a process may run on, as the kernel writes them (`0-1`, `0,2`), if readable.
pub fn allowed_cpus(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .map(|list| list.trim().to_owned())
}

/// Where the sampler reads a server's CPU time and memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A local process, from `/proc/<pid>`.
    Process(u32),
    /// A server `compare` did not start, from its `/metrics` at this base URL.
    Metrics(String),
    /// A cgroup on this machine (a container's: the path `/proc/<pid>/cgroup` gives, e.g.
    /// `/libpod_parent/libpod-<id>`), from its CPU and memory accounting files.
    Cgroup(String),
}

impl Source {
    /// Reads the source now.
    pub fn read(&self) -> anyhow::Result<ProcReading> {
        match self {
            Source::Process(pid) => read(*pid),
            Source::Metrics(url) => {
                let reading = crate::servers::external::scrape(url)?;
                Ok(ProcReading {
                    cpu_s: reading.cpu_s,
                    rss_kib: reading.rss_bytes / 1024,
                })
            }
            Source::Cgroup(path) => read_cgroup(path),
        }
    }

    /// The process id, 0 for a server read through its `/metrics`.
    pub fn pid(&self) -> u32 {
        match self {
            Source::Process(pid) => *pid,
            Source::Metrics(_) | Source::Cgroup(_) => 0,
        }
    }
}

/// Cumulative time counters of a set of CPUs (`/proc/stat`), in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSample {
    /// Seconds since the sampler started.
    pub t_s: f64,
    /// Time the CPUs were not idle: tasks, interrupts, and time stolen by the hypervisor.
    pub busy_s: f64,
    /// Time the CPUs ran tasks (user, nice, system) or were stolen: `busy_s` without interrupts,
    /// whose share of a process's network traffic `/proc/<pid>/stat` does not count.
    pub task_s: f64,
    /// All time of the CPUs (busy + idle + iowait).
    pub total_s: f64,
}

/// Reads the cumulative counters of `cpus` from `/proc/stat`.
pub fn read_cpus(cpus: &[usize]) -> anyhow::Result<CpuSample> {
    let text = std::fs::read_to_string("/proc/stat").context("Failed to read /proc/stat")?;
    let ticks = procfs::ticks_per_second() as f64;
    let mut sample = CpuSample::default();
    let mut found = 0;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(cpu) = words
            .next()
            .and_then(|w| w.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if !cpus.contains(&cpu) {
            continue;
        }
        // user nice system idle iowait irq softirq steal (guest time is inside user already).
        let v: Vec<f64> = words.take(8).map(|w| w.parse().unwrap_or(0.0)).collect();
        if v.len() < 8 {
            continue;
        }
        let task = v[0] + v[1] + v[2] + v[7];
        let busy = task + v[5] + v[6];
        sample.task_s += task / ticks;
        sample.busy_s += busy / ticks;
        sample.total_s += (busy + v[3] + v[4]) / ticks;
        found += 1;
    }
    if found == 0 {
        anyhow::bail!("/proc/stat has none of CPU {cpus:?}");
    }
    Ok(sample)
}

/// What a sampler recorded about a set of CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuSeries {
    /// The CPUs, summed together.
    pub cpus: Vec<usize>,
    /// Their samples in time order.
    pub samples: Vec<CpuSample>,
}

impl CpuSeries {
    /// How busy the CPUs were between `start_s` and `end_s` (seconds on the sampler's clock).
    pub fn busy(&self, start_s: f64, end_s: f64) -> CpuBusy {
        let capacity = self.cpus.len() as f64 * 100.0;
        if self.samples.len() < 2 || end_s <= start_s {
            return CpuBusy {
                capacity_percent: capacity,
                ..CpuBusy::default()
            };
        }
        let at = |t: f64| -> CpuSample {
            let samples = &self.samples;
            let after = samples
                .partition_point(|s| s.t_s <= t)
                .clamp(1, samples.len() - 1);
            let (a, b) = (samples[after - 1], samples[after]);
            let f = if b.t_s > a.t_s {
                ((t - a.t_s) / (b.t_s - a.t_s)).clamp(0.0, 1.0)
            } else {
                0.0
            };
            CpuSample {
                t_s: t,
                busy_s: a.busy_s + (b.busy_s - a.busy_s) * f,
                task_s: a.task_s + (b.task_s - a.task_s) * f,
                total_s: a.total_s + (b.total_s - a.total_s) * f,
            }
        };
        let (a, b) = (at(start_s), at(end_s));
        let total = b.total_s - a.total_s;
        if total <= 0.0 {
            return CpuBusy {
                capacity_percent: capacity,
                ..CpuBusy::default()
            };
        }
        CpuBusy {
            busy_percent: (b.busy_s - a.busy_s) / total * capacity,
            task_percent: (b.task_s - a.task_s) / total * capacity,
            capacity_percent: capacity,
        }
    }
}

/// Everything a sampler recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// One series per pid, in the order given.
    pub processes: Vec<ProcSeries>,
    /// One series per CPU set, in the order given.
    pub cpus: Vec<CpuSeries>,
}

/// Samples a set of processes (and CPU sets) on a background thread until finished.
pub struct Sampler {
    origin: Instant,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Recorded>,
}

impl Sampler {
    /// Starts sampling `pids` and the CPU sets `cpu_sets` every `interval`, taking a first sample
    /// at once.
    pub fn start(pids: &[u32], cpu_sets: &[Vec<usize>], interval: Duration) -> Sampler {
        let sources: Vec<Source> = pids.iter().map(|&pid| Source::Process(pid)).collect();
        Sampler::start_sources(&sources, cpu_sets, interval)
    }

    /// Starts sampling `sources` (processes or servers' `/metrics`) and the CPU sets `cpu_sets`
    /// every `interval`, taking a first sample at once.
    pub fn start_sources(
        sources: &[Source],
        cpu_sets: &[Vec<usize>],
        interval: Duration,
    ) -> Sampler {
        let origin = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let sources = sources.to_vec();
        let mut cpus: Vec<CpuSeries> = cpu_sets
            .iter()
            .map(|set| CpuSeries {
                cpus: set.clone(),
                samples: Vec::new(),
            })
            .collect();
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("brigade-procstat".into())
            .spawn(move || {
                let mut series: Vec<ProcSeries> = sources
                    .iter()
                    .map(|source| ProcSeries {
                        pid: source.pid(),
                        samples: Vec::new(),
                    })
                    .collect();
                loop {
                    // Read the flag before sampling so the last sample is taken after `finish`
                    // was asked for: the window's end is then always covered.
                    let stopping = flag.load(Ordering::Acquire);
                    for (one, source) in series.iter_mut().zip(&sources) {
                        if let Ok(reading) = source.read() {
                            one.samples.push(ProcSample {
                                t_s: origin.elapsed().as_secs_f64(),
                                cpu_s: reading.cpu_s,
                                rss_kib: reading.rss_kib,
                            });
                        }
                    }
                    for one in &mut cpus {
                        if let Ok(mut sample) = read_cpus(&one.cpus) {
                            sample.t_s = origin.elapsed().as_secs_f64();
                            one.samples.push(sample);
                        }
                    }
                    if stopping {
                        return Recorded {
                            processes: series,
                            cpus,
                        };
                    }
                    std::thread::park_timeout(interval);
                }
            })
            .expect("Failed to start the /proc sampler thread");
        Sampler {
            origin,
            stop,
            handle,
        }
    }

    /// Seconds on this sampler's clock (the time base of its samples).
    pub fn now_s(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }

    /// Takes a last sample, stops the thread and returns what it recorded.
    pub fn finish(self) -> Recorded {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        self.handle.join().unwrap_or(Recorded {
            processes: Vec::new(),
            cpus: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(points: &[(f64, f64, u64)]) -> ProcSeries {
        ProcSeries {
            pid: 1,
            samples: points
                .iter()
                .map(|&(t_s, cpu_s, rss_kib)| ProcSample {
                    t_s,
                    cpu_s,
                    rss_kib,
                })
                .collect(),
        }
    }

    #[test]
    fn usage_interpolates_cpu_across_the_window_edges() {
        // One core fully busy from t=0 to t=4, samples every second.
        let s = series(&[
            (0.0, 0.0, 1024),
            (1.0, 1.0, 2048),
            (2.0, 2.0, 4096),
            (3.0, 3.0, 1024),
        ]);
        let usage = s.usage(0.5, 2.5);
        assert!((usage.cpu_percent - 100.0).abs() < 1e-9, "{usage:?}");
        assert_eq!(usage.peak_rss_mib, 4.0);
        assert_eq!(usage.samples, 2);
    }

    #[test]
    fn an_idle_process_reads_zero_cpu() {
        let s = series(&[(0.0, 5.0, 1024), (1.0, 5.0, 1024), (2.0, 5.0, 1024)]);
        assert_eq!(s.usage(0.0, 2.0).cpu_percent, 0.0);
    }
}
