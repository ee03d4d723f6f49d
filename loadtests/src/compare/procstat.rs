//! CPU and memory of a running process, read from `/proc`: a one-off reading, and a background
//! sampler that records the servers (and the generator itself) while a run is measured.
//!
//! CPU is the process's user + system time summed over all its threads (`/proc/<pid>/stat`), so a
//! multi-threaded server at full tilt on two cores reads 200%. Memory is the resident set size; the
//! kernel's own high-water mark (`VmHWM`) is read once at the end of a server's life.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
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

/// One timed sample of a process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProcSample {
    /// Seconds since the sampler started.
    pub t_s: f64,
    /// Cumulative CPU seconds of the process (all threads).
    pub cpu_s: f64,
    /// Resident memory, KiB.
    pub rss_kib: u64,
}

/// Everything a sampler recorded about one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcSeries {
    /// The process sampled.
    pub pid: u32,
    /// Its samples in time order (empty if it could not be read at all).
    pub samples: Vec<ProcSample>,
}

/// CPU and memory of a process over a window of time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcUsage {
    /// Mean CPU use over the window, percent of one core.
    pub cpu_percent: f64,
    /// Largest resident memory seen in the window, MiB.
    pub peak_rss_mib: f64,
    /// Mean resident memory over the window's samples, MiB.
    pub mean_rss_mib: f64,
    /// Samples that fell inside the window.
    pub samples: usize,
}

impl ProcSeries {
    /// CPU and memory between `start_s` and `end_s` (seconds on the sampler's clock).
    ///
    /// CPU is the growth of the cumulative counter across the window, interpolated between the
    /// samples either side of each edge, so the figure does not depend on where the ticks fell.
    pub fn usage(&self, start_s: f64, end_s: f64) -> ProcUsage {
        let span = end_s - start_s;
        if self.samples.len() < 2 || span <= 0.0 {
            return ProcUsage::default();
        }
        let cpu = self.cpu_at(end_s) - self.cpu_at(start_s);
        let inside: Vec<&ProcSample> = self
            .samples
            .iter()
            .filter(|s| s.t_s >= start_s && s.t_s <= end_s)
            .collect();
        let rss: Vec<u64> = if inside.is_empty() {
            // A window shorter than the sampling interval: use the nearest samples.
            self.samples.iter().map(|s| s.rss_kib).collect()
        } else {
            inside.iter().map(|s| s.rss_kib).collect()
        };
        let peak = rss.iter().copied().max().unwrap_or(0);
        let mean = rss.iter().sum::<u64>() as f64 / rss.len().max(1) as f64;
        ProcUsage {
            cpu_percent: (cpu / span * 100.0).max(0.0),
            peak_rss_mib: peak as f64 / 1024.0,
            mean_rss_mib: mean / 1024.0,
            samples: inside.len(),
        }
    }

    /// The cumulative CPU seconds at time `t_s`, interpolated (clamped to the first/last sample).
    fn cpu_at(&self, t_s: f64) -> f64 {
        let samples = &self.samples;
        let first = samples[0];
        let last = samples[samples.len() - 1];
        if t_s <= first.t_s {
            return first.cpu_s;
        }
        if t_s >= last.t_s {
            return last.cpu_s;
        }
        let after = samples.partition_point(|s| s.t_s <= t_s);
        let (a, b) = (samples[after - 1], samples[after]);
        if b.t_s <= a.t_s {
            return a.cpu_s;
        }
        a.cpu_s + (b.cpu_s - a.cpu_s) * (t_s - a.t_s) / (b.t_s - a.t_s)
    }
}

/// Samples a set of processes on a background thread until finished.
pub struct Sampler {
    origin: Instant,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<ProcSeries>>,
}

impl Sampler {
    /// Starts sampling `pids` every `interval`, taking a first sample at once.
    pub fn start(pids: &[u32], interval: Duration) -> Sampler {
        let origin = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let pids = pids.to_vec();
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("brigade-procstat".into())
            .spawn(move || {
                let mut series: Vec<ProcSeries> = pids
                    .iter()
                    .map(|&pid| ProcSeries {
                        pid,
                        samples: Vec::new(),
                    })
                    .collect();
                loop {
                    // Read the flag before sampling so the last sample is taken after `finish`
                    // was asked for: the window's end is then always covered.
                    let stopping = flag.load(Ordering::Acquire);
                    for one in &mut series {
                        if let Ok(reading) = read(one.pid) {
                            one.samples.push(ProcSample {
                                t_s: origin.elapsed().as_secs_f64(),
                                cpu_s: reading.cpu_s,
                                rss_kib: reading.rss_kib,
                            });
                        }
                    }
                    if stopping {
                        return series;
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

    /// Takes a last sample, stops the thread and returns what it recorded, one series per pid.
    pub fn finish(self) -> Vec<ProcSeries> {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        self.handle.join().unwrap_or_default()
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
