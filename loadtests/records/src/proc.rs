//! A process's `/proc` figures over a run (CPU seconds and RSS, sampled) and what they come to
//! over a window; a set of CPUs' busy share.

use serde::{Deserialize, Serialize};

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

/// How busy a set of CPUs was over a window; percent of one core, like process figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuBusy {
    /// Non-idle time (anyone's, interrupts included), percent of one core; at most 100 × CPUs.
    pub busy_percent: f64,
    /// Task time (anyone's, interrupts excluded), percent of one core.
    pub task_percent: f64,
    /// 100 × the number of CPUs.
    pub capacity_percent: f64,
}
