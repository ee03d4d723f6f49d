//! The process's own CPU time and resident memory, read from `/proc/self/stat` at scrape time (not
//! per request): what `process_cpu_seconds_total`, `process_resident_memory_bytes` and
//! `process_start_time_seconds` report.

/// The process's figures at one scrape.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// CPU seconds, user + system, all threads.
    pub(crate) cpu_s: f64,
    /// Resident bytes.
    pub(crate) rss_bytes: u64,
    /// When it started, seconds since the Unix epoch (to the kernel's clock tick): a scraper that
    /// reaches one process through several URLs (`--service all`) tells it is one by this.
    pub(crate) start_time_s: Option<f64>,
}

/// The process's figures now; `None` where `/proc` cannot be read.
pub(crate) fn read() -> Option<Reading> {
    let stat = procfs::process::Process::myself().ok()?.stat().ok()?;
    let ticks = procfs::ticks_per_second() as f64;
    Some(Reading {
        cpu_s: (stat.utime + stat.stime) as f64 / ticks,
        rss_bytes: stat.rss * procfs::page_size(),
        start_time_s: procfs::boot_time_secs()
            .ok()
            .map(|boot| boot as f64 + stat.starttime as f64 / ticks),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_has_resident_memory_and_some_cpu_time() {
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        let reading = super::read().expect("/proc/self/stat");
        assert!(reading.rss_bytes > 1 << 20, "{reading:?} (and {x})");
        assert!(reading.cpu_s >= 0.0);
        // Started after 2020 and not in the future.
        let start = reading.start_time_s.expect("a start time");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(start > 1.577e9 && start <= now + 1.0, "{start} vs {now}");
    }
}
