//! Servers `compare` did not start: `--external RUNTIME:SERVICE=URL`, one URL per service per
//! runtime, for servers on other machines or in containers. `compare` cannot restart them, pin
//! them or read their `/proc`: it checks that each answers `/ready` and that its `/health` names
//! the runtime it is listed under, and reads its CPU time and resident memory from its
//! `/metrics` (`process_cpu_seconds_total`, `process_resident_memory_bytes`), where it has one.
//! URLs whose `/metrics` give the same `process_start_time_seconds` are one process (a server
//! serving several services) and are counted once.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context};

use super::announce::Announced;
use super::process::{http_get, wait_ready};

/// How long an external service has to answer `/ready` before the comparison gives up on it.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// One `--external RUNTIME:SERVICE=URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalSpec {
    /// The runtime the server is listed under (checked against its `/health`).
    pub runtime: String,
    /// The service it serves.
    pub service: String,
    /// Its base URL, `http://host:port`.
    pub url: String,
}

impl ExternalSpec {
    /// Parses `RUNTIME:SERVICE=URL`.
    pub fn parse(text: &str) -> anyhow::Result<ExternalSpec> {
        let usage = || format!("--external {text:?}: expected RUNTIME:SERVICE=URL");
        let (name, url) = text.split_once('=').with_context(usage)?;
        let (runtime, service) = name.split_once(':').with_context(usage)?;
        let url = url.trim_end_matches('/');
        if runtime.is_empty() || service.is_empty() || !url.starts_with("http://") {
            bail!("{} (the URL as http://host:port)", usage());
        }
        Ok(ExternalSpec {
            runtime: runtime.to_owned(),
            service: service.to_owned(),
            url: url.to_owned(),
        })
    }
}

/// One runtime's external services.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalRuntime {
    /// The runtime.
    pub runtime: String,
    /// Its services and their URLs, in the order given.
    pub services: Announced,
    /// What serves with them on their CPUs (their databases), by name → cgroup path
    /// (`--external-companion RUNTIME:NAME=CGROUP`).
    pub companions: Vec<(String, String)>,
    /// The cgroups the servers themselves run in, by name → cgroup path (`--external-cgroup
    /// RUNTIME:NAME=CGROUP`): their CPU in nanoseconds, what side by side needs.
    pub cgroups: Vec<(String, String)>,
}

/// The runtime a label names: `axum#containers` is `axum` (labels keep two servers of one runtime
/// apart).
fn runtime_of(label: &str) -> &str {
    label.split_once('#').map_or(label, |(runtime, _)| runtime)
}

/// Parses `RUNTIME:NAME=CGROUP` (the form of `--external-companion` and `--external-cgroup`).
fn cgroup_spec<'a>(flag: &str, text: &'a str) -> anyhow::Result<(&'a str, &'a str, &'a str)> {
    let usage = || format!("{flag} {text:?}: expected RUNTIME:NAME=CGROUP");
    let (name, cgroup) = text.split_once('=').with_context(usage)?;
    let (runtime, name) = name.split_once(':').with_context(usage)?;
    if runtime.is_empty() || name.is_empty() || cgroup.is_empty() {
        bail!("{}", usage());
    }
    Ok((runtime, name, cgroup))
}

/// The external runtime `runtime`, or why `flag` may not name it.
fn find_runtime<'a>(
    externals: &'a mut [ExternalRuntime],
    flag: &str,
    text: &str,
    runtime: &str,
) -> anyhow::Result<&'a mut ExternalRuntime> {
    externals
        .iter_mut()
        .find(|e| e.runtime == runtime)
        .with_context(|| format!("{flag} {text:?}: no --external gives the runtime {runtime}"))
}

/// Adds each `--external-cgroup RUNTIME:NAME=CGROUP` to its runtime; a runtime no `--external`
/// gives is refused.
pub fn add_cgroups(externals: &mut [ExternalRuntime], specs: &[String]) -> anyhow::Result<()> {
    for text in specs {
        let (runtime, name, cgroup) = cgroup_spec("--external-cgroup", text)?;
        find_runtime(externals, "--external-cgroup", text, runtime)?
            .cgroups
            .push((name.to_owned(), cgroup.to_owned()));
    }
    Ok(())
}

/// Adds each `--external-companion RUNTIME:NAME=CGROUP` to its runtime; a runtime no `--external`
/// gives is refused.
pub fn add_companions(externals: &mut [ExternalRuntime], specs: &[String]) -> anyhow::Result<()> {
    for text in specs {
        let (runtime, name, cgroup) = cgroup_spec("--external-companion", text)?;
        find_runtime(externals, "--external-companion", text, runtime)?
            .companions
            .push((name.to_owned(), cgroup.to_owned()));
    }
    Ok(())
}

/// Groups the specs by runtime, in the order the runtimes first appear; a service given twice for
/// one runtime is refused.
pub fn group(specs: &[ExternalSpec]) -> anyhow::Result<Vec<ExternalRuntime>> {
    let mut out: Vec<ExternalRuntime> = Vec::new();
    for spec in specs {
        let index = match out.iter().position(|r| r.runtime == spec.runtime) {
            Some(index) => index,
            None => {
                out.push(ExternalRuntime {
                    runtime: spec.runtime.clone(),
                    services: Announced::default(),
                    companions: Vec::new(),
                    cgroups: Vec::new(),
                });
                out.len() - 1
            }
        };
        let services = &mut out[index].services;
        if services.names().contains(&spec.service) {
            bail!(
                "--external gives {}:{} twice: one URL per service per runtime",
                spec.runtime,
                spec.service
            );
        }
        services.insert(spec.service.clone(), spec.url.clone());
    }
    Ok(out)
}

/// What a service's `/health` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    /// The runtime it serves with.
    pub runtime: Option<String>,
    /// The store it uses.
    pub store: Option<String>,
}

/// Waits for `url`'s `/ready`, then reads its `/health`.
pub fn health(url: &str) -> anyhow::Result<Health> {
    wait_ready(url, brigade_records::protocol::Protocol::H1, READY_TIMEOUT)?;
    let (status, body) = http_get(url, "/health")?;
    if status != 200 {
        bail!("{url}/health answered {status}");
    }
    let value: serde_json::Value = serde_json::from_str(&body)
        .with_context(|| format!("{url}/health is not JSON: {body:?}"))?;
    let field = |name: &str| value.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    Ok(Health {
        runtime: field("runtime"),
        store: field("store"),
    })
}

impl ExternalRuntime {
    /// Checks every service: ready, and its `/health` names this runtime (one that names another is
    /// refused, as a started server announcing another runtime is). Returns the stores they said.
    pub fn check(&self) -> anyhow::Result<Vec<String>> {
        let mut stores = Vec::new();
        for (service, url) in self.services.urls() {
            let health = health(&url)
                .with_context(|| format!("external {}:{service} at {url}", self.runtime))?;
            if let Some(runtime) = &health.runtime {
                if runtime != runtime_of(&self.runtime) {
                    bail!(
                        "external {}:{service} at {url} serves with {runtime}, not {}",
                        self.runtime,
                        runtime_of(&self.runtime)
                    );
                }
            }
            stores.extend(health.store);
        }
        stores.sort();
        stores.dedup();
        Ok(stores)
    }

    /// The URLs to read `/metrics` from, one per process (URLs whose processes share a start time
    /// are one process), and the services whose `/metrics` gave no CPU figure.
    pub fn metrics_sources(&self) -> (Vec<String>, Vec<String>) {
        let mut by_process: BTreeMap<String, String> = BTreeMap::new();
        let mut sources = Vec::new();
        let mut missing = Vec::new();
        for (service, url) in self.services.urls() {
            match scrape(&url) {
                Ok(reading) => match reading.start_time_s {
                    Some(start) => {
                        by_process.entry(format!("{start:.3}")).or_insert_with(|| {
                            sources.push(url.clone());
                            url
                        });
                    }
                    None => sources.push(url),
                },
                Err(_) => missing.push(service),
            }
        }
        (sources, missing)
    }
}

/// One reading of a server's `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricsReading {
    /// `process_cpu_seconds_total`.
    pub cpu_s: f64,
    /// `process_resident_memory_bytes`.
    pub rss_bytes: u64,
    /// `process_start_time_seconds`, if given.
    pub start_time_s: Option<f64>,
}

/// Reads `GET {url}/metrics`.
pub fn scrape(url: &str) -> anyhow::Result<MetricsReading> {
    let (status, body) = http_get(url, "/metrics")?;
    if status != 200 {
        bail!("{url}/metrics answered {status}");
    }
    parse_metrics(&body).with_context(|| {
        format!("{url}/metrics has no process_cpu_seconds_total and process_resident_memory_bytes")
    })
}

/// The process figures in a Prometheus/OpenMetrics text exposition, if it has CPU and memory.
pub fn parse_metrics(text: &str) -> Option<MetricsReading> {
    let value = |name: &str| {
        text.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?;
            // `name value` or `name{labels} value`, not a longer name that starts the same.
            if !(rest.starts_with(' ') || rest.starts_with('{')) {
                return None;
            }
            rest.rsplit_once(' ')
                .or(Some(("", rest)))
                .and_then(|(_, v)| v.trim().parse::<f64>().ok())
        })
    };
    Some(MetricsReading {
        cpu_s: value("process_cpu_seconds_total")?,
        rss_bytes: value("process_resident_memory_bytes")? as u64,
        start_time_s: value("process_start_time_seconds"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_is_runtime_service_and_url() {
        let spec = ExternalSpec::parse("actix:waiter=http://10.0.0.2:8081/").unwrap();
        assert_eq!(spec.runtime, "actix");
        assert_eq!(spec.service, "waiter");
        assert_eq!(spec.url, "http://10.0.0.2:8081");
        assert!(ExternalSpec::parse("actix=http://h:1").is_err());
        assert!(ExternalSpec::parse("actix:waiter").is_err());
        assert!(ExternalSpec::parse("actix:waiter=https://h:1").is_err());
    }

    #[test]
    fn specs_group_by_runtime_in_order_and_a_service_twice_is_refused() {
        let specs: Vec<ExternalSpec> = [
            "b:waiter=http://h:1",
            "a:waiter=http://h:2",
            "b:tables=http://h:3",
        ]
        .iter()
        .map(|s| ExternalSpec::parse(s).unwrap())
        .collect();
        let grouped = group(&specs).unwrap();
        assert_eq!(grouped.len(), 2);
        assert_eq!(grouped[0].runtime, "b");
        assert_eq!(grouped[0].services.names(), vec!["waiter", "tables"]);
        assert_eq!(grouped[1].services.names(), vec!["waiter"]);
        let twice = [specs[0].clone(), specs[0].clone()];
        assert!(group(&twice).unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn metrics_text_gives_cpu_memory_and_start_time() {
        let text = "# HELP process_cpu_seconds User and system CPU time.\n\
                    # TYPE process_cpu_seconds counter\n\
                    process_cpu_seconds_total 12.5\n\
                    process_resident_memory_bytes 10485760\n\
                    process_start_time_seconds 1700000000.25\n\
                    process_cpu_seconds_total_other 99\n# EOF\n";
        let reading = parse_metrics(text).unwrap();
        assert_eq!(reading.cpu_s, 12.5);
        assert_eq!(reading.rss_bytes, 10 << 20);
        assert_eq!(reading.start_time_s, Some(1_700_000_000.25));
        assert!(parse_metrics("brigade_http_requests_in_flight 1\n").is_none());
    }
}
