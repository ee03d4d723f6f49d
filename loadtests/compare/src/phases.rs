//! Where a comparison's time goes: the seconds each phase took and how often it ran, summed as the
//! run goes, for the report's setup section ("Where the time went"). A window set's own seconds
//! are split by what its plan asked (the warm-up, the windows, the perf count after them) and what
//! is left (the agreed start, reading the clocks).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use brigade_report::setup::PhaseTime;

/// The phases of a comparison, in the order the report lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    /// The fresh state every run starts from, made once (preloaded folders).
    Prepare,
    /// The isolated runs, each on a fresh server (its start and stop included).
    Isolated,
    /// Side by side: starting a round's fresh servers.
    Starts,
    /// Side by side: stopping them.
    Stops,
    /// Side by side: the short runs that find a level's rate.
    Probes,
    /// Side by side: the window sets' warm-ups.
    Warmups,
    /// Side by side: the measured windows.
    Windows,
    /// Side by side: the perf counts after the windows.
    Counts,
    /// Side by side: a window set's seconds beyond those three.
    SetOverhead,
    /// The instruction counts (`--instructions`).
    Instructions,
    /// The capacity searches (`--slo`).
    Capacity,
    /// Judging every verdict.
    Judge,
    /// Of the side-by-side phases above, the budget's extra rounds (counted in them too).
    Budget,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Prepare => "preparing the fresh state",
            Phase::Isolated => "isolated runs",
            Phase::Starts => "server starts",
            Phase::Stops => "server stops",
            Phase::Probes => "rate probes",
            Phase::Warmups => "warm-ups",
            Phase::Windows => "windows",
            Phase::Counts => "perf counts",
            Phase::SetOverhead => "window sets' own overhead",
            Phase::Instructions => "instruction counts",
            Phase::Capacity => "capacity searches",
            Phase::Judge => "judging",
            Phase::Budget => "of these, the budget's extra rounds",
        }
    }
}

/// Seconds and counts per phase, shared by every thread of a comparison.
#[derive(Debug, Default)]
pub(crate) struct Phases(Mutex<BTreeMap<Phase, (f64, u32)>>);

/// Adds the time from its start to its drop to a phase.
pub(crate) struct Timer<'a> {
    phases: &'a Phases,
    phase: Phase,
    began: Instant,
}

impl Drop for Timer<'_> {
    fn drop(&mut self) {
        self.phases.add(self.phase, self.began.elapsed());
    }
}

impl Phases {
    /// Adds `took` and one occurrence to `phase`.
    pub(crate) fn add(&self, phase: Phase, took: Duration) {
        if let Ok(mut all) = self.0.lock() {
            let entry = all.entry(phase).or_insert((0.0, 0));
            entry.0 += took.as_secs_f64();
            entry.1 += 1;
        }
    }

    /// Times `phase` from now until the timer is dropped.
    pub(crate) fn timer(&self, phase: Phase) -> Timer<'_> {
        Timer {
            phases: self,
            phase,
            began: Instant::now(),
        }
    }

    /// A window set that took `took` in all, of which its plan asked `warmup`, `windows` and
    /// `counts`.
    pub(crate) fn window_set(
        &self,
        took: Duration,
        warmup: Duration,
        windows: Duration,
        counts: Duration,
    ) {
        self.add(Phase::Warmups, warmup.min(took));
        self.add(Phase::Windows, windows.min(took.saturating_sub(warmup)));
        self.add(
            Phase::Counts,
            counts.min(took.saturating_sub(warmup + windows)),
        );
        self.add(
            Phase::SetOverhead,
            took.saturating_sub(warmup + windows + counts),
        );
    }

    /// Every phase that ran, in order.
    pub(crate) fn report(&self) -> Vec<PhaseTime> {
        let all = self.0.lock().map(|all| all.clone()).unwrap_or_default();
        all.into_iter()
            .map(|(phase, (seconds, count))| PhaseTime {
                phase: phase.name().to_owned(),
                seconds,
                count,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_set_is_split_by_its_plan_and_the_rest_is_overhead() {
        let phases = Phases::default();
        let s = Duration::from_secs;
        phases.window_set(s(10), s(2), s(6), s(1));
        phases.window_set(s(10), s(2), s(6), s(1));
        // A set cut short (a server died): never more than it took.
        phases.window_set(s(3), s(2), s(6), s(1));
        let report = phases.report();
        let of = |name: &str| report.iter().find(|p| p.phase == name).unwrap().clone();
        assert_eq!((of("warm-ups").seconds, of("warm-ups").count), (6.0, 3));
        assert_eq!(of("windows").seconds, 13.0);
        assert_eq!(of("perf counts").seconds, 2.0);
        assert_eq!(of("window sets' own overhead").seconds, 2.0);
        let total: f64 = report.iter().map(|p| p.seconds).sum();
        assert_eq!(total, 23.0, "the parts add up to the sets' time");
    }

    #[test]
    fn a_timer_counts_once_when_dropped_and_phases_list_in_order() {
        let phases = Phases::default();
        {
            let _t = phases.timer(Phase::Stops);
        }
        phases.add(Phase::Prepare, Duration::from_millis(5));
        let report = phases.report();
        assert_eq!(report.len(), 2);
        assert_eq!(report[0].phase, "preparing the fresh state");
        assert_eq!(
            (report[1].phase.as_str(), report[1].count),
            ("server stops", 1)
        );
    }
}
