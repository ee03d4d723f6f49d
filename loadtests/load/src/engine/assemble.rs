//! The result from what the threads counted: the measured window as it was kept, the per-route
//! statistics merged, the settings and the machine written beside them.

use std::time::Instant;

use super::layout::Layout;
use super::stats::RouteStats;
use super::threads::{Joined, Watched};
use super::LoadConfig;
use crate::scenario::Scenario;
use brigade_records::result::{LoadResult, LoadSettings, Window};

/// The measured window in seconds and on the wall clock, and the generator's CPU use over it.
pub(super) struct MeasuredWindow {
    pub(super) elapsed_s: f64,
    pub(super) start_unix_s: f64,
    pub(super) generator_cpu_percent: f64,
}

impl MeasuredWindow {
    /// The window from `measure_start` to the end `watched` saw, no longer than the duration.
    pub(super) fn new(
        config: &LoadConfig,
        measure_start: Instant,
        watched: &Watched,
    ) -> MeasuredWindow {
        let finished = watched.finished;
        let measured_wall = finished
            .saturating_duration_since(measure_start)
            .as_secs_f64();
        let elapsed_s = match config.duration {
            Some(d) => d.as_secs_f64().min(measured_wall.max(f64::MIN_POSITIVE)),
            None => measured_wall,
        };
        let start_unix_s = crate::shard::unix_s(watched.finished_wall)
            - finished
                .saturating_duration_since(measure_start)
                .as_secs_f64();
        let generator_cpu_percent = match watched.cpu_at_start {
            Some((at, cpu)) if finished > at => {
                100.0 * (watched.cpu_at_end - cpu) / (finished - at).as_secs_f64()
            }
            _ => 0.0,
        };
        MeasuredWindow {
            elapsed_s,
            start_unix_s,
            generator_cpu_percent,
        }
    }
}

/// What a run's result is made of besides its config, scenario and layout.
pub(super) struct Assembled {
    pub(super) target_names: Vec<String>,
    pub(super) seed: u64,
    pub(super) started_at: String,
    pub(super) window: MeasuredWindow,
    pub(super) joined: Joined,
}

/// The run's result: its settings, the per-route and total figures, the seconds and handshakes.
pub(super) fn assemble_result(
    config: &LoadConfig,
    scenario: &Scenario,
    layout: &Layout,
    parts: Assembled,
) -> LoadResult {
    let Assembled {
        target_names,
        seed,
        started_at,
        window,
        joined,
    } = parts;
    let elapsed_s = window.elapsed_s;
    let mut total = RouteStats::default();
    for r in &joined.routes {
        total.merge(r);
    }
    let routes = joined
        .routes
        .into_iter()
        .zip(scenario.routes())
        .map(|(r, name)| r.into_result(name.clone(), elapsed_s))
        .collect();
    LoadResult {
        settings: settings_of(config, scenario, layout, target_names, seed),
        machine: crate::machine::describe(),
        started_at,
        elapsed_s,
        generator_cpu_percent: window.generator_cpu_percent,
        total: total.into_result("total".into(), elapsed_s),
        routes,
        sub_windows: joined.seconds.sub_windows(),
        seconds: joined.seconds.into_result(),
        window: Some(Window {
            start_unix_s: window.start_unix_s,
            end_unix_s: window.start_unix_s + elapsed_s,
        }),
        shards: Vec::new(),
        tls: config
            .protocol
            .tls()
            .then(|| joined.handshakes.into_result(elapsed_s)),
        attempt: None,
        interrupted: None,
    }
}

/// The settings a result records: this shard's users, rate, connections and requests.
pub(super) fn settings_of(
    config: &LoadConfig,
    scenario: &Scenario,
    layout: &Layout,
    target_names: Vec<String>,
    seed: u64,
) -> LoadSettings {
    let my_tasks = layout.my_tasks();
    LoadSettings {
        targets: target_names,
        scenario: scenario.label().to_string(),
        users: if layout.open.is_none() {
            Some(my_tasks)
        } else {
            None
        },
        rate: layout
            .open
            .map(|r| r * f64::from(my_tasks) / f64::from(layout.tasks)),
        connections: my_tasks,
        duration_s: config.duration.map(|d| d.as_secs_f64()),
        requests: layout.requests,
        warmup_s: config.warmup.as_secs_f64(),
        keepalive: config.keepalive,
        threads: layout.threads as u32,
        timeout_ms: config.timeout.as_millis() as u64,
        think_ms: config.think.as_millis() as u64,
        pace_tick_ms: (layout.open.is_some() && !config.pace_tick.is_zero())
            .then_some(config.pace_tick.as_secs_f64() * 1e3),
        seed: Some(seed),
        shard: (!layout.shard.is_whole()).then_some(layout.shard),
        protocol: config.protocol,
        streams: config.streams,
    }
}
