//! The machine's own stalls, measured beside a capacity: before a search, a timer thread pinned to
//! each CPU sleeps a millisecond at a time for a few seconds and records how late it woke (the
//! timers run in `brigade_records::stalls`; their figures are judged here). A
//! pause of the VM (10–130 ms here, at any load) shows as a late wake-up on the CPU it hit.
//!
//! The server CPUs and the generator CPUs are probed apart, since both reach the latency the search
//! judges: latency counts from each request's intended send time, so a generator that pauses sends
//! late and its pause reads as latency too. From the pauses the probe derives **the machine's own
//! figure** for each SLO — the latency a request arriving at a random moment would see from the
//! pauses alone (the rest of the pause it arrived in): the `q` percentile is the `v` at which the
//! pauses' time beyond `v` is a share `1 − q` of the probe, `Σ max(0, dᵢ − v) / T = 1 − q`; the
//! mean is `Σ dᵢ² / 2T`; the max is the longest pause. When the machine's own figure already breaks
//! an SLO on either side, no server can hold it here, and a search would measure the machine: the
//! capacity is refused with that figure.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use brigade_records::threshold::{SloBound, Threshold};

/// How long each timer sleep asks for.
pub const TICK: Duration = Duration::from_millis(1);
/// A wake-up later than this past its tick counts as a pause (the timer's own slack on this
/// machine is about 0.1 ms).
pub const PAUSE_MS: f64 = 1.0;
/// The probe's length unless told.
pub const DEFAULT_PROBE: Duration = Duration::from_secs(2);

/// One side's CPUs (the servers', the generator's) as the probe saw them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuStalls {
    /// `server`, `generator`, or `machine` when the two are not apart.
    pub side: String,
    /// The CPUs probed.
    pub cpus: Vec<usize>,
    /// Pauses (wake-ups more than [`PAUSE_MS`] late) per second per CPU.
    pub pauses_per_s: f64,
    /// The mean pause, ms (0 without one).
    pub mean_pause_ms: f64,
    /// The longest late wake-up, ms.
    pub longest_ms: f64,
    /// The share of the probe's time spent in pauses, percent (the worst CPU's).
    pub paused_pct: f64,
    /// The machine's own figure for each SLO on this side (the worst CPU's), in the SLO's order.
    pub own: Vec<OwnFigure>,
}

/// The machine's own figure for one SLO.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OwnFigure {
    /// The SLO, as given.
    pub slo: String,
    /// The figure the pauses alone give a request arriving at a random moment, in the SLO's unit
    /// (ms; errors have none and are left out).
    pub value: f64,
    /// Whether that figure already breaks the SLO.
    pub breaks: bool,
}

/// What the probe found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StallProbe {
    /// Seconds probed.
    pub seconds: f64,
    /// One entry per side.
    pub sides: Vec<CpuStalls>,
    /// Why no capacity can be claimed at these SLOs on this machine, when that is so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

impl StallProbe {
    /// One line: `server CPUs 1: 0.5 pauses/s, mean 12 ms, longest 31 ms; generator …`.
    pub fn sentence(&self) -> String {
        let sides: Vec<String> = self
            .sides
            .iter()
            .map(|s| {
                let own: Vec<String> = s
                    .own
                    .iter()
                    .map(|o| format!("{} {:.2} ms", o.slo, o.value))
                    .collect();
                format!(
                    "{} CPUs {}: {:.2} pauses/s, mean {:.1} ms, longest {:.1} ms, {:.3}% of the \
                     time paused; own figure {}",
                    s.side,
                    cpu_list(&s.cpus),
                    s.pauses_per_s,
                    s.mean_pause_ms,
                    s.longest_ms,
                    s.paused_pct,
                    own.join(", ")
                )
            })
            .collect();
        format!(
            "stall probe ({:.0} s, a {} ms timer per CPU): {}",
            self.seconds,
            TICK.as_millis(),
            sides.join("; ")
        )
    }
}

fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Late wake-ups of one CPU's timer, ms, and the seconds it ran.
#[derive(Debug, Clone, Default)]
pub struct Lateness {
    /// Every wake-up's lateness, ms.
    pub late_ms: Vec<f64>,
    /// Seconds the timer ran.
    pub seconds: f64,
}

impl Lateness {
    /// The pauses among the wake-ups.
    fn pauses(&self) -> impl Iterator<Item = f64> + '_ {
        self.late_ms.iter().copied().filter(|&d| d > PAUSE_MS)
    }

    /// The share of time beyond `v` ms within the pauses: `Σ max(0, d − v) / T`.
    fn time_beyond(&self, v: f64) -> f64 {
        let beyond: f64 = self.late_ms.iter().map(|&d| (d - v).max(0.0)).sum();
        beyond / (self.seconds * 1000.0).max(f64::MIN_POSITIVE)
    }

    /// The machine's own figure for `bound`, ms (None for errors).
    pub fn own(&self, bound: SloBound) -> Option<f64> {
        match bound {
            SloBound::Tail { share, .. } => {
                // Σ max(0, d − v) falls as v grows: bisect for the v where it equals the share.
                let (mut low, mut high) = (0.0, self.late_ms.iter().copied().fold(0.0, f64::max));
                if self.time_beyond(0.0) <= share {
                    return Some(0.0);
                }
                for _ in 0..60 {
                    let mid = (low + high) / 2.0;
                    if self.time_beyond(mid) > share {
                        low = mid;
                    } else {
                        high = mid;
                    }
                }
                Some(high)
            }
            SloBound::Mean { .. } => {
                let squares: f64 = self.late_ms.iter().map(|d| d * d).sum();
                Some(squares / (2.0 * (self.seconds * 1000.0).max(f64::MIN_POSITIVE)))
            }
            SloBound::Max { .. } => Some(self.late_ms.iter().copied().fold(0.0, f64::max)),
            SloBound::ErrorShare { .. } | SloBound::ErrorCount { .. } => None,
        }
    }
}

/// What the probe found: every side's figures from its CPUs' timers (`timed[i]` for `sides[i]`),
/// judged against `slo`.
pub fn judge(
    sides: &[(String, Vec<usize>)],
    timed: &[Vec<Lateness>],
    seconds: f64,
    slo: &[Threshold],
) -> StallProbe {
    let sides: Vec<CpuStalls> = sides
        .iter()
        .zip(timed)
        .map(|((side, cpus), timers)| summarize(side, cpus, timers, slo))
        .collect();
    let refused = refusal(&sides);
    StallProbe {
        seconds,
        sides,
        refused,
    }
}

/// One side's figures from its CPUs' timers.
pub fn summarize(side: &str, cpus: &[usize], timers: &[Lateness], slo: &[Threshold]) -> CpuStalls {
    let pauses: Vec<f64> = timers.iter().flat_map(Lateness::pauses).collect();
    let seconds: f64 = timers.iter().map(|t| t.seconds).sum();
    let worst = |f: &dyn Fn(&Lateness) -> f64| timers.iter().map(f).fold(0.0, f64::max);
    let own = slo
        .iter()
        .filter_map(|t| {
            let (bound, limit) = (t.slo_bound()?, t.latency_bound_ms()?);
            let value = worst(&|l: &Lateness| l.own(bound).unwrap_or(0.0));
            Some(OwnFigure {
                slo: t.to_string(),
                value,
                breaks: value >= limit,
            })
        })
        .collect();
    CpuStalls {
        side: side.to_owned(),
        cpus: cpus.to_vec(),
        pauses_per_s: pauses.len() as f64 / seconds.max(f64::MIN_POSITIVE),
        mean_pause_ms: if pauses.is_empty() {
            0.0
        } else {
            pauses.iter().sum::<f64>() / pauses.len() as f64
        },
        longest_ms: worst(&|l: &Lateness| l.late_ms.iter().copied().fold(0.0, f64::max)),
        paused_pct: 100.0
            * worst(&|l: &Lateness| {
                l.pauses().sum::<f64>() / (l.seconds * 1000.0).max(f64::MIN_POSITIVE)
            }),
        own,
    }
}

/// Why the machine cannot give a capacity at these SLOs, when its own figure breaks one.
fn refusal(sides: &[CpuStalls]) -> Option<String> {
    let broken: Vec<String> = sides
        .iter()
        .flat_map(|s| {
            s.own.iter().filter(|o| o.breaks).map(move |o| {
                format!(
                    "the {} CPUs' own pauses give {} = {:.1} ms at idle",
                    s.side,
                    o.slo.split(['<', '>']).next().unwrap_or(&o.slo),
                    o.value
                )
            })
        })
        .collect();
    (!broken.is_empty()).then(|| {
        format!(
            "refused: this machine cannot give a capacity at this SLO honestly ({}), so any \
             server's would measure the machine",
            broken.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use brigade_records::threshold::parse_slo;

    fn lateness(pauses_ms: &[f64], seconds: f64) -> Lateness {
        // A quiet timer (0.1 ms late) at every tick, and the pauses among them.
        let ticks = (seconds * 1000.0) as usize;
        let mut late_ms = vec![0.1; ticks.saturating_sub(pauses_ms.len())];
        late_ms.extend_from_slice(pauses_ms);
        Lateness { late_ms, seconds }
    }

    #[test]
    fn the_machines_own_percentile_is_where_the_pauses_time_beyond_it_is_the_tail() {
        // One 50 ms pause in 2 s: the time beyond v is (50 − v) ms of 2,000, 1% at v = 30 ms.
        let l = lateness(&[50.0], 2.0);
        let p99 = parse_slo("p99<10ms").unwrap().slo_bound().unwrap();
        let own = l.own(p99).unwrap();
        assert!((own - 30.0).abs() < 0.5, "{own}");
        // p90 lets 10% past: only the quiet ticks' slack is left, well under a tenth of a ms.
        let p90 = parse_slo("p90<10ms").unwrap().slo_bound().unwrap();
        assert!(l.own(p90).unwrap() < 0.1);
        let max = parse_slo("max<20ms").unwrap().slo_bound().unwrap();
        assert_eq!(l.own(max), Some(50.0));
    }

    #[test]
    fn a_side_whose_own_figure_breaks_the_slo_refuses_and_says_the_figure() {
        let slo = vec![
            parse_slo("p99<10ms").unwrap(),
            parse_slo("errors<1%").unwrap(),
        ];
        let quiet = summarize("generator", &[0], &[lateness(&[], 2.0)], &slo);
        let stalled = summarize("server", &[1], &[lateness(&[50.0, 3.0], 2.0)], &slo);
        assert_eq!(stalled.own.len(), 1, "errors have no own figure");
        assert!(stalled.own[0].breaks && !quiet.own[0].breaks);
        assert!((stalled.pauses_per_s - 1.0).abs() < 1e-9, "{stalled:?}");
        assert!((stalled.mean_pause_ms - 26.5).abs() < 1e-9);
        assert_eq!(stalled.longest_ms, 50.0);
        let why = refusal(&[quiet.clone(), stalled]).unwrap();
        assert!(
            why.contains("server CPUs' own pauses give p99 = 30.0 ms"),
            "{why}"
        );
        assert_eq!(refusal(&[quiet]), None);
    }
}
