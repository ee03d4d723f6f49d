//! The machine a run is made on, read from `/proc` and `uname`: written into every result so a
//! number is never separated from the hardware that produced it.

use brigade_records::result::Machine;

/// Describes this machine (fields it cannot read are left empty or zero).
pub fn describe() -> Machine {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let uname = nix::sys::utsname::uname().ok();
    let hostname = match &uname {
        Some(u) => u.nodename().to_string_lossy().into_owned(),
        None => read("/proc/sys/kernel/hostname"),
    };
    let os = match &uname {
        Some(u) => format!(
            "{} {} {} ({})",
            os_name(),
            u.sysname().to_string_lossy(),
            u.release().to_string_lossy(),
            u.machine().to_string_lossy()
        ),
        None => format!(
            "{} {}",
            std::env::consts::OS,
            read("/proc/sys/kernel/osrelease")
        ),
    };
    let cpuinfo = read("/proc/cpuinfo");
    Machine {
        hostname,
        os: os.trim().to_string(),
        cpu: cpu_model(&cpuinfo),
        cores: logical_cores(&cpuinfo),
        memory_mib: mem_total_kib(&read("/proc/meminfo")) / 1024,
        brigade_version: env!("CARGO_PKG_VERSION").to_string(),
        rustc: brigade_records::result::rustc().to_string(),
    }
}

/// The distribution's name from `/etc/os-release` (`Debian GNU/Linux 12 (bookworm)`), or the OS family.
fn os_name() -> String {
    let text = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| std::env::consts::OS.to_string())
}

/// The first `model name` of `/proc/cpuinfo` (x86), else `Hardware`/`CPU part` lines (arm), else the architecture.
fn cpu_model(cpuinfo: &str) -> String {
    for key in ["model name", "Hardware", "cpu model", "CPU part"] {
        if let Some(v) = cpuinfo
            .lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
        {
            return v.1.trim().to_string();
        }
    }
    std::env::consts::ARCH.to_string()
}

/// Logical CPUs: `processor` lines of `/proc/cpuinfo`, else what the standard library sees.
fn logical_cores(cpuinfo: &str) -> u32 {
    let n = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
        .count();
    if n > 0 {
        n as u32
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
    }
}

/// `MemTotal` of `/proc/meminfo`, in KiB.
fn mem_total_kib(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read() {
        let info = "processor\t: 0\nmodel name\t: Example CPU @ 3GHz\n\nprocessor\t: 1\nmodel name\t: Example CPU @ 3GHz\n";
        assert_eq!(cpu_model(info), "Example CPU @ 3GHz");
        assert_eq!(logical_cores(info), 2);
        assert_eq!(
            mem_total_kib("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            24_576_000
        );
    }

    #[test]
    fn this_machine_is_described() {
        let m = describe();
        assert!(m.cores >= 1);
        assert!(!m.os.is_empty());
        assert_eq!(m.brigade_version, env!("CARGO_PKG_VERSION"));
    }
}
