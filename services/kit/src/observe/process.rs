//! The process's own CPU time and resident memory, read from `/proc/self/stat` at scrape time (not
//! per request): what `process_cpu_seconds_total` and `process_resident_memory_bytes` report.

/// CPU seconds (user + system) and resident bytes now; `None` where `/proc` cannot be read.
pub(crate) fn read() -> Option<(f64, u64)> {
    let stat = procfs::process::Process::myself().ok()?.stat().ok()?;
    let ticks = procfs::ticks_per_second() as f64;
    Some((
        (stat.utime + stat.stime) as f64 / ticks,
        stat.rss * procfs::page_size(),
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_has_resident_memory_and_some_cpu_time() {
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        let (cpu, rss) = super::read().expect("/proc/self/stat");
        assert!(rss > 1 << 20, "rss {rss} (and {x})");
        assert!(cpu >= 0.0);
    }
}
