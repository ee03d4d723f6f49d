//! The machine's own stalls, timed before a capacity search: a timer thread pinned to each CPU of
//! each side sleeps a millisecond at a time and records how late it woke. What the wake-ups mean
//! for an SLO (the machine's own figure, a refusal) is the search's to judge
//! (`brigade_slo::stalls`).

use std::time::{Duration, Instant};

use brigade_records::threshold::Threshold;
use brigade_slo::stalls::{self, Lateness, StallProbe, TICK};

/// The side to probe when servers and generator are not apart: every CPU this process may use.
pub fn whole_machine() -> (String, Vec<usize>) {
    (
        "machine".to_owned(),
        (0..crate::engine::usable_cpus()).collect(),
    )
}

/// Runs a timer pinned to `cpu` for `length`.
fn time_one(cpu: Option<usize>, length: Duration) -> Lateness {
    if let Some(cpu) = cpu {
        // An unpinned timer still measures the machine; a CPU that cannot be pinned is probed so.
        let _ = crate::engine::pin_current_thread(cpu);
    }
    let began = Instant::now();
    let mut late_ms = Vec::with_capacity((length.as_millis() as usize).max(1));
    while began.elapsed() < length {
        let asked = Instant::now();
        std::thread::sleep(TICK);
        let late = asked.elapsed().saturating_sub(TICK);
        late_ms.push(late.as_secs_f64() * 1000.0);
    }
    Lateness {
        late_ms,
        seconds: began.elapsed().as_secs_f64(),
    }
}

/// Probes every side's CPUs at once for `length` (one timer thread per CPU; a side with no CPUs
/// listed gets one unpinned timer) and judges the machine's own figures against `slo`.
pub fn probe(sides: &[(String, Vec<usize>)], length: Duration, slo: &[Threshold]) -> StallProbe {
    let timed: Vec<Vec<Lateness>> = std::thread::scope(|scope| {
        let handles: Vec<Vec<_>> = sides
            .iter()
            .map(|(_, cpus)| {
                let cpus: Vec<Option<usize>> = if cpus.is_empty() {
                    vec![None]
                } else {
                    cpus.iter().copied().map(Some).collect()
                };
                cpus.into_iter()
                    .map(|cpu| scope.spawn(move || time_one(cpu, length)))
                    .collect()
            })
            .collect();
        handles
            .into_iter()
            .map(|side| {
                side.into_iter()
                    .map(|h| h.join().unwrap_or_default())
                    .collect()
            })
            .collect()
    });
    stalls::judge(sides, &timed, length.as_secs_f64(), slo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use brigade_records::threshold::parse_slo;

    #[test]
    fn the_probe_times_every_cpu_of_every_side() {
        let slo = vec![parse_slo("p99<1s").unwrap()];
        let sides = vec![
            ("server".to_owned(), vec![0]),
            ("generator".to_owned(), Vec::new()),
        ];
        let probe = probe(&sides, Duration::from_millis(50), &slo);
        assert_eq!(probe.sides.len(), 2);
        assert_eq!(probe.sides[0].cpus, [0]);
        assert!(probe.sides.iter().all(|s| s.own.len() == 1));
        // A second-long pause in 50 ms would have ended the test's machine first.
        assert_eq!(probe.refused, None, "{probe:?}");
        assert!(
            probe.sentence().contains("server CPUs 0:"),
            "{}",
            probe.sentence()
        );
    }
}
