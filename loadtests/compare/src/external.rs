//! A run on servers `compare` did not start (`--external`, [`brigade_meter::servers::external`]): no
//! fresh state, no pinning, no `/proc` — the servers are loaded as they are found, and their CPU
//! and memory come from their `/metrics`, sampled like a process's `/proc` (the CPU counter's
//! growth across the measured window, interpolated at its edges). What is missing is said: a
//! server without `/metrics` leaves the server CPU, µs/request and RSS columns empty.

use std::collections::BTreeMap;

use brigade_load::engine;
use brigade_load::scenario::Scenario;

use brigade_meter::isolated::sampled_sources;

use crate::measure::{fill, Bench, Served};
use brigade_meter::order::Planned;
use brigade_meter::procstat::Source;
use brigade_meter::servers::external::ExternalRuntime;
use brigade_report::{RunRecord, ServerRecord, StateReset};

/// How an external run's state is made, in words: it is not.
pub(crate) const AS_FOUND: &str =
    "as found: an external server, not restarted between runs (it holds \
    what earlier runs and anyone else left)";

/// The report's sentence on state when the servers are external.
pub(crate) const STATE: &str =
    "the servers were started outside compare (--external) and were not \
    restarted: every run loads them as it finds them, holding what earlier runs left, so a fresh, \
    identical state per run is impossible and the order of runs can move a result (the rotation \
    of runtimes spreads that over every runtime alike). A preload is the servers' own (start them \
    with `serve --preload N`); compare refuses --preload with --external.";

impl Bench<'_> {
    /// Makes one run on `external`'s servers, filling `record`; returns what they were.
    pub(crate) fn run_external(
        &self,
        external: &ExternalRuntime,
        planned: &Planned,
        scenario: &Scenario,
        record: &mut RunRecord,
        progress: &str,
    ) -> Served {
        let (sources, source) = figure_sources(external);
        let rss_mib = || rss_sum_mib(&sources);
        record.reset = Some(StateReset {
            pid: 0,
            how: AS_FOUND.to_owned(),
            copy_s: None,
            preload_s: None,
            preloaded: BTreeMap::new(),
            startup_s: 0.0,
        });
        let mut server = ServerRecord {
            runtime: external.runtime.clone(),
            round: record.index as u32,
            preload: planned.preload,
            pid: 0,
            urls: external.services.urls(),
            cpus_allowed: None,
            startup_s: 0.0,
            rss_idle_mib: rss_mib().unwrap_or(0.0),
            rss_after_mib: None,
            rss_peak_mib: None,
            stop: None,
            log: String::new(),
            source: Some(source),
        };
        match external
            .services
            .targets(scenario.label(), &scenario.services())
        {
            Ok(targets) => {
                let config = self.config(targets, planned);
                let companions: Vec<Source> = external
                    .companions
                    .iter()
                    .map(|(_, cgroup)| Source::Cgroup(cgroup.clone()))
                    .collect();
                let sampled = sampled_sources(&sources, &companions, self.cpus, self.shape, || {
                    engine::run(&config, scenario)
                });
                fill(record, sampled, progress);
            }
            Err(err) => {
                println!("{progress}: failed: {err:#}");
                record.error = Some(format!("{err:#}"));
            }
        }
        server.rss_after_mib = rss_mib();
        server.rss_peak_mib = (!sources.is_empty() && record.server.peak_rss_mib > 0.0)
            .then_some(record.server.peak_rss_mib);
        Served {
            record: server,
            workers: None,
            limits: None,
            services: external.services.names(),
        }
    }
}

/// Where `external`'s figures are read, and that in words: their cgroups where given
/// (nanoseconds, read without asking the servers); else their `/metrics`.
fn figure_sources(external: &ExternalRuntime) -> (Vec<Source>, String) {
    if external.cgroups.is_empty() {
        let (urls, missing) = external.metrics_sources();
        let sources = urls.iter().cloned().map(Source::Metrics).collect();
        let words = source_words(&urls, &missing, &external.companions);
        (sources, words)
    } else {
        let sources = external
            .cgroups
            .iter()
            .map(|(_, cgroup)| Source::Cgroup(cgroup.clone()))
            .collect();
        let words = cgroup_words(&external.cgroups, &external.companions);
        (sources, words)
    }
}

/// The servers' resident memory now, summed, MiB; `None` when none could be read.
fn rss_sum_mib(sources: &[Source]) -> Option<f64> {
    let readings: Vec<f64> = sources
        .iter()
        .filter_map(|s| s.read().ok())
        .map(|r| r.rss_kib as f64 / 1024.0)
        .collect();
    (!readings.is_empty()).then(|| readings.iter().sum())
}

/// Where an external server's figures came from, in words.
pub(crate) fn source_words(
    urls: &[String],
    missing: &[String],
    companions: &[(String, String)],
) -> String {
    let mut out = if urls.is_empty() {
        "no /metrics answered: server CPU %, µs/request and RSS are missing".to_owned()
    } else {
        format!(
            "/metrics (process_cpu_seconds_total, process_resident_memory_bytes) of {} \
             ({} process(es), summed)",
            urls.join(", "),
            urls.len()
        )
    };
    if !missing.is_empty() && !urls.is_empty() {
        out.push_str(&format!(
            "; no /metrics from {}: their CPU and memory are not in the figures",
            missing.join(", ")
        ));
    }
    out.push_str(&companion_words(companions));
    out
}

/// The sentence on the companions (databases) read from their cgroups, if there are any.
fn companion_words(companions: &[(String, String)]) -> String {
    if companions.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = companions.iter().map(|(n, _)| n.as_str()).collect();
    format!(
        "; companions on the server CPUs, from their cgroups (cpuacct/cpu.stat), counted as the \
         server side's own use, not in the server columns: {}",
        names.join(", ")
    )
}

/// Where an external server's figures came from when its cgroups were given, in words.
pub(crate) fn cgroup_words(
    cgroups: &[(String, String)],
    companions: &[(String, String)],
) -> String {
    let names: Vec<&str> = cgroups.iter().map(|(n, _)| n.as_str()).collect();
    let mut out = format!(
        "the cgroups of {} ({} summed: CPU from cpuacct.usage / cpu.stat in nanoseconds, memory \
         the cgroups' charge, page cache included)",
        names.join(", "),
        cgroups.len()
    );
    out.push_str(&companion_words(companions));
    out
}

/// The report's line on the servers when they are external: what each runtime's URLs were and
/// the stores they said they use.
pub(crate) fn server_words(externals: &[ExternalRuntime], stores: &[String]) -> String {
    let list: Vec<String> = externals
        .iter()
        .map(|e| {
            let urls: Vec<String> = e
                .services
                .urls()
                .into_iter()
                .map(|(service, url)| format!("{service}={url}"))
                .collect();
            format!("{}: {}", e.runtime, urls.join(" "))
        })
        .collect();
    format!(
        "not started by compare (--external): {}; store as /health says: {}; server CPU and \
         memory from each server's cgroups where given (--external-cgroup), else its /metrics, \
         read every {} ms during a run (not /proc: the processes may be on another machine or \
         in a container), not pinned by compare; \
         the generator's seed differs from cell to cell (the same for every runtime in a cell), \
         so random keys do not meet what earlier runs left",
        list.join("; "),
        if stores.is_empty() {
            "?".to_owned()
        } else {
            stores.join(", ")
        },
        brigade_meter::isolated::SCRAPE_EVERY.as_millis()
    )
}

/// Checks every external server before anything runs (ready, and serving the runtime it is listed
/// under); returns the stores they say they use.
pub(crate) fn check_all(externals: &[ExternalRuntime]) -> anyhow::Result<Vec<String>> {
    let mut stores = Vec::new();
    for e in externals {
        stores.extend(e.check()?);
    }
    stores.sort();
    stores.dedup();
    Ok(stores)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_words_say_what_is_missing() {
        let none = source_words(&[], &["waiter".to_owned()], &[]);
        assert!(none.contains("missing"), "{none}");
        let some = source_words(
            &["http://a:1".to_owned()],
            &["tables".to_owned()],
            &[("waiter-db".to_owned(), "/x".to_owned())],
        );
        assert!(
            some.contains("companions") && some.contains("waiter-db"),
            "{some}"
        );
        assert!(
            some.contains("http://a:1") && some.contains("no /metrics from tables"),
            "{some}"
        );
    }
}
