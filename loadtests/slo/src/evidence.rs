//! What the search knows about one offered rate: every visit's sub-windows, pooled, and the
//! three answers an SLO can get there — **held** (every SLO's upper bound inside it), **failed**
//! (one SLO's lower bound past it), or **not yet known** (measure longer at the same rate).
//!
//! A percentile SLO is judged through the share of latencies past its bound: `p99<10ms` holds
//! while fewer than 1% of the pooled latencies are at or above 10 ms, which is the pooled p99 being
//! under 10 ms. That share, the error share and the mean latency are ratios of sums over the
//! sub-windows, bounded by [`brigade_stats::pooled_share`] with the sub-window as the unit (a
//! stall delays a contiguous batch of requests: they are not independent). The maximum and an
//! error count are read from the pool as they are.

use serde::{Deserialize, Serialize};

use brigade_records::histogram::LatencyHistogram;
use brigade_records::threshold::{SloBound, Threshold};

/// The confidence of each bound, one-sided: a held rate's upper bounds and a failed rate's lower
/// bound each hold at 95%.
pub const DECISION_CONFIDENCE: f64 = 0.95;

/// One sub-window as a step measured it.
#[derive(Debug, Clone, Default)]
pub struct WindowFigures {
    /// Requests completed in it.
    pub requests: u64,
    /// Of those, failed.
    pub errors: u64,
    /// Their latencies (answered or timed out), exact.
    pub latency: LatencyHistogram,
}

/// The answer at a rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Every SLO's upper bound is inside it.
    Held,
    /// One SLO's lower bound is past it (or it stayed unknown up to the cap).
    Failed,
    /// Neither yet: measure longer at this rate.
    #[default]
    NotYetKnown,
}

impl Answer {
    /// `held`, `failed`, `not yet known`.
    pub fn words(self) -> &'static str {
        match self {
            Answer::Held => "held",
            Answer::Failed => "failed",
            Answer::NotYetKnown => "not yet known",
        }
    }
}

/// One SLO judged at one rate: its pooled figure and bounds against its limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SloEvidence {
    /// The SLO, as given.
    pub slo: String,
    /// What the figures are: `% of latencies at or above 10 ms`, `mean ms`, `% errors`, ….
    pub figure: String,
    /// The pooled figure.
    pub estimate: f64,
    /// Its lower bound (one-sided, [`DECISION_CONFIDENCE`]); the figure itself for a max or a count.
    pub low: f64,
    /// Its upper bound.
    pub high: f64,
    /// The limit the SLO sets on the figure.
    pub limit: f64,
    /// The SLO's answer alone.
    pub answer: Answer,
}

/// What one sub-window adds: per SLO a `(y, n)` for the pooled ratio, and its largest latency.
#[derive(Debug, Clone)]
struct Tally {
    parts: Vec<(f64, f64)>,
    max_ms: f64,
    errors: u64,
    /// The visit it belongs to (0 for the first).
    visit: u32,
}

/// Every sub-window measured at one rate, over every visit.
#[derive(Debug, Clone)]
pub struct Pool {
    /// The rate, requests/s.
    pub rate: f64,
    /// Visits (steps) made at it.
    pub visits: u32,
    /// Whether its held answer was set aside for a lower rate that failed on as much evidence.
    pub overruled: bool,
    tallies: Vec<Tally>,
    latency: LatencyHistogram,
}

impl Pool {
    /// A rate not measured yet.
    pub fn new(rate: f64) -> Pool {
        Pool {
            rate,
            visits: 0,
            overruled: false,
            tallies: Vec::new(),
            latency: LatencyHistogram::new(),
        }
    }

    /// Sub-windows pooled.
    pub fn windows(&self) -> usize {
        self.tallies.len()
    }

    /// The pooled latency histogram (every sub-window merged exactly).
    pub fn latency(&self) -> &LatencyHistogram {
        &self.latency
    }

    /// Adds one visit's sub-windows, tallied against `slo`.
    pub fn add(&mut self, windows: &[WindowFigures], slo: &[Threshold]) {
        self.visits += 1;
        for w in windows {
            self.latency.merge(&w.latency);
            let summary = w.latency.latency();
            let parts = slo
                .iter()
                .map(|t| match t.slo_bound() {
                    Some(SloBound::Tail { ms, inclusive, .. }) => (
                        w.latency.count_past_ms(ms, inclusive) as f64,
                        w.latency.len() as f64,
                    ),
                    Some(SloBound::Mean { .. }) => (
                        summary.mean_ms * w.latency.len() as f64,
                        w.latency.len() as f64,
                    ),
                    Some(SloBound::ErrorShare { .. }) => (w.errors as f64, w.requests as f64),
                    _ => (0.0, 0.0),
                })
                .collect();
            self.tallies.push(Tally {
                visit: self.visits - 1,
                parts,
                max_ms: summary.max_ms,
                errors: w.errors,
            });
        }
    }

    /// SLO `i`'s `(y, n)` per unit: per sub-window while the rate has one visit, per visit (its
    /// sub-windows summed) once it has several. A slow period of this machine lasts seconds and
    /// spans a visit's sub-windows (whole 4-s visits at p99 30–110 ms between clean ones were
    /// measured at 80,000/s), so across visits the visit is the independent unit; within the one
    /// visit a rate starts with, the sub-window is the finest unit there is.
    fn units(&self, i: usize) -> Vec<(f64, f64)> {
        if self.visits < 2 {
            return self.tallies.iter().map(|w| w.parts[i]).collect();
        }
        let mut per_visit = vec![(0.0, 0.0); self.visits as usize];
        for w in &self.tallies {
            let unit = &mut per_visit[w.visit as usize];
            unit.0 += w.parts[i].0;
            unit.1 += w.parts[i].1;
        }
        per_visit
    }

    /// Every SLO judged on the pool, and the rate's answer with what decided it in words.
    /// `max_windows` is the cap: a rate still not known with that many sub-windows has failed.
    pub fn judge(
        &self,
        slo: &[Threshold],
        max_windows: usize,
    ) -> (Answer, Vec<SloEvidence>, String) {
        let evidence: Vec<SloEvidence> = slo
            .iter()
            .enumerate()
            .map(|(i, t)| self.judge_one(i, t))
            .collect();
        let failed: Vec<String> = evidence
            .iter()
            .filter(|e| e.answer == Answer::Failed)
            .map(evidence_words)
            .collect();
        let (mut answer, mut why) = if !failed.is_empty() {
            (Answer::Failed, failed.join("; "))
        } else if evidence.iter().all(|e| e.answer == Answer::Held) {
            (Answer::Held, String::new())
        } else {
            let open: Vec<String> = evidence
                .iter()
                .filter(|e| e.answer == Answer::NotYetKnown)
                .map(evidence_words)
                .collect();
            (Answer::NotYetKnown, open.join("; "))
        };
        if answer == Answer::NotYetKnown && self.windows() >= max_windows {
            answer = Answer::Failed;
            why = format!(
                "not shown to hold in {} sub-windows, the most a rate gets ({why})",
                self.windows()
            );
        }
        if answer == Answer::Held && self.overruled {
            answer = Answer::Failed;
            why = "held, but a lower rate failed on as many sub-windows: a capacity cannot pass \
                   a rate that failed"
                .to_owned();
        }
        (answer, evidence, why)
    }

    /// SLO `i` (`t`) judged on the pool.
    fn judge_one(&self, i: usize, t: &Threshold) -> SloEvidence {
        let bound = t.slo_bound();
        let point = |figure: String, value: f64, limit: f64, holds: bool| SloEvidence {
            slo: t.to_string(),
            figure,
            estimate: value,
            low: value,
            high: value,
            limit,
            answer: if holds { Answer::Held } else { Answer::Failed },
        };
        let (figure, limit, scale) = match bound {
            Some(SloBound::Tail {
                ms,
                share,
                inclusive,
            }) => (
                format!(
                    "% of latencies {} {} ms",
                    if inclusive { "above" } else { "at or above" },
                    brigade_records::threshold::short(ms)
                ),
                share * 100.0,
                100.0,
            ),
            Some(SloBound::Mean { ms }) => ("mean ms".to_owned(), ms, 1.0),
            Some(SloBound::ErrorShare { share }) => ("% errors".to_owned(), share * 100.0, 100.0),
            Some(SloBound::Max { ms }) => {
                let max = self.tallies.iter().map(|w| w.max_ms).fold(0.0, f64::max);
                return point("max ms".to_owned(), max, ms, max < ms);
            }
            Some(SloBound::ErrorCount { count, inclusive }) => {
                let errors = self.tallies.iter().map(|w| w.errors).sum::<u64>() as f64;
                let holds = if inclusive {
                    errors <= count
                } else {
                    errors < count
                };
                return point("errors".to_owned(), errors, count, holds);
            }
            None => return point("not an SLO".to_owned(), 0.0, 0.0, false),
        };
        let parts = self.units(i);
        match brigade_stats::pooled_share(&parts, DECISION_CONFIDENCE) {
            Some(b) => SloEvidence {
                slo: t.to_string(),
                figure,
                estimate: b.share * scale,
                low: b.low * scale,
                high: b.high * scale,
                limit,
                answer: if b.high * scale < limit {
                    Answer::Held
                } else if b.low * scale >= limit {
                    Answer::Failed
                } else {
                    Answer::NotYetKnown
                },
            },
            // Fewer than two sub-windows that saw a request: no bound yet.
            None => {
                let (y, n) = parts
                    .iter()
                    .fold((0.0, 0.0), |(y, n), p| (y + p.0, n + p.1));
                let estimate = if n > 0.0 { y / n * scale } else { 0.0 };
                SloEvidence {
                    slo: t.to_string(),
                    figure,
                    estimate,
                    low: 0.0,
                    high: f64::INFINITY,
                    limit,
                    answer: Answer::NotYetKnown,
                }
            }
        }
    }
}

/// `p99<10ms: 1.4% of latencies at or above 10 ms (0.9–1.9%, limit 1%)`.
pub fn evidence_words(e: &SloEvidence) -> String {
    let unit = if e.figure.starts_with('%') { "%" } else { "" };
    let bounds = if e.low == e.high {
        String::new()
    } else if e.high.is_finite() {
        format!("{}–{}{unit}, ", significant(e.low), significant(e.high))
    } else {
        "one sub-window, no bound yet, ".to_owned()
    };
    format!(
        "{}: {}{unit} {} ({bounds}limit {}{unit})",
        e.slo,
        significant(e.estimate),
        e.figure.trim_start_matches("% ").trim_start_matches('%'),
        significant(e.limit)
    )
}

/// A figure with three significant digits and no trailing zeros.
fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    brigade_records::threshold::trim_zeros(format!("{v:.digits$}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use brigade_records::threshold::parse_slo;
    use std::time::Duration;

    /// A sub-window of `n` requests, `over` of them at 20 ms and the rest at 1 ms.
    fn window(n: u64, over: u64, errors: u64) -> WindowFigures {
        let mut latency = LatencyHistogram::new();
        latency.record_n(Duration::from_millis(1), n - over);
        latency.record_n(Duration::from_millis(20), over);
        WindowFigures {
            requests: n,
            errors,
            latency,
        }
    }

    fn slo(texts: &[&str]) -> Vec<Threshold> {
        texts.iter().map(|t| parse_slo(t).unwrap()).collect()
    }

    #[test]
    fn clean_windows_hold_an_overload_fails_and_one_stall_in_few_is_not_yet_known() {
        let slo = slo(&["p99<10ms"]);
        let mut clean = Pool::new(1000.0);
        clean.add(
            &[window(1000, 0, 0), window(1000, 1, 0), window(1000, 0, 0)],
            &slo,
        );
        assert_eq!(clean.judge(&slo, 16).0, Answer::Held);
        let mut overload = Pool::new(9000.0);
        overload.add(
            &[
                window(1000, 300, 0),
                window(1000, 420, 0),
                window(1000, 380, 0),
            ],
            &slo,
        );
        let (answer, evidence, why) = overload.judge(&slo, 16);
        assert_eq!(answer, Answer::Failed);
        assert!((evidence[0].estimate - 36.667).abs() < 0.01, "{evidence:?}");
        assert!(
            why.starts_with("p99<10ms: 36.7% of latencies at or above 10 ms ("),
            "{why}"
        );
        // One stalled second of three: 2% pooled, but one unit says little.
        let mut stalled = Pool::new(5000.0);
        stalled.add(
            &[window(1000, 0, 0), window(1000, 60, 0), window(1000, 0, 0)],
            &slo,
        );
        assert_eq!(stalled.judge(&slo, 16).0, Answer::NotYetKnown);
        // At the cap, not known is failed, with why.
        let (answer, _, why) = stalled.judge(&slo, 3);
        assert_eq!(answer, Answer::Failed);
        assert!(
            why.starts_with("not shown to hold in 3 sub-windows"),
            "{why}"
        );
    }

    #[test]
    fn a_stall_pooled_over_many_visits_is_a_small_share_and_holds() {
        let slo = slo(&["p99<10ms"]);
        let mut pool = Pool::new(5000.0);
        // Four visits of four sub-windows; one sub-window of the last holds a stall.
        for visit in 0..4 {
            let mut windows = vec![window(1000, 0, 0); 4];
            if visit == 3 {
                windows[2] = window(1000, 40, 0);
            }
            pool.add(&windows, &slo);
        }
        assert_eq!(pool.visits, 4);
        assert_eq!(pool.windows(), 16);
        let (answer, evidence, _) = pool.judge(&slo, 16);
        assert_eq!(answer, Answer::Held, "{evidence:?}");
        assert!((evidence[0].estimate - 0.25).abs() < 1e-9);
        // The pooled histogram is every sub-window merged.
        assert_eq!(pool.latency().len(), 16_000);
    }

    #[test]
    fn across_visits_the_visit_is_the_unit() {
        // Two visits, one slow all through (2% past in every sub-window), one clean: by
        // sub-windows the spread would look small; by visits it is one unit each, and not known.
        let slo = slo(&["p99<10ms"]);
        let mut pool = Pool::new(5000.0);
        pool.add(&vec![window(1000, 20, 0); 4], &slo);
        assert_eq!(pool.judge(&slo, 16).0, Answer::Failed);
        pool.add(&vec![window(1000, 0, 0); 4], &slo);
        let (answer, evidence, _) = pool.judge(&slo, 16);
        assert_eq!(answer, Answer::NotYetKnown, "{evidence:?}");
        assert!((evidence[0].estimate - 1.0).abs() < 1e-9);
    }

    #[test]
    fn errors_max_and_mean_are_judged_as_their_slos_say() {
        let slo = slo(&["errors<1%", "max<30ms", "mean<5ms", "errors<=5"]);
        let mut pool = Pool::new(100.0);
        pool.add(
            &[window(1000, 1, 2), window(1000, 1, 3), window(1000, 1, 0)],
            &slo,
        );
        let (answer, evidence, _) = pool.judge(&slo, 16);
        assert_eq!(answer, Answer::Held, "{evidence:?}");
        assert!((evidence[1].estimate - 20.0).abs() < 0.05, "{evidence:?}");
        assert_eq!(evidence[3].estimate, 5.0);
        pool.add(&[window(1000, 0, 1)], &slo);
        let (answer, evidence, why) = pool.judge(&slo, 16);
        assert_eq!(answer, Answer::Failed);
        assert_eq!(evidence[3].answer, Answer::Failed);
        assert!(why.contains("errors<=5: 6 errors"), "{why}");
    }

    #[test]
    fn an_overruled_rate_reads_as_failed() {
        let slo = slo(&["p99<10ms"]);
        let mut pool = Pool::new(1000.0);
        pool.add(&[window(1000, 0, 0), window(1000, 0, 0)], &slo);
        assert_eq!(pool.judge(&slo, 16).0, Answer::Held);
        pool.overruled = true;
        let (answer, _, why) = pool.judge(&slo, 16);
        assert_eq!(answer, Answer::Failed);
        assert!(why.contains("a lower rate failed"), "{why}");
    }
}
