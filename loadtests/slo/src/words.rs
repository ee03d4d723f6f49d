//! The search's words: a rate as its sentences give it, and the one-line sentences of a search
//! and of a runtime's capacity over its searches, as `brigade load --slo` prints them and the
//! reports write them.

use crate::record::{CapacitySummary, SloSearch};

/// `12,345/s`, `15.2/s`: a rate as the search's sentences give it.
pub fn rate_words(rate: f64) -> String {
    if rate >= 100.0 {
        format!(
            "{}/s",
            brigade_records::number::grouped(rate.round() as u64)
        )
    } else {
        format!("{rate:.1}/s")
    }
}

impl SloSearch {
    /// One line: `hyper waiter 20 users, search 1: 9,540/s at p99<10ms (bracket 9,540–9,690/s; 14
    /// steps, 81 s)`.
    pub fn sentence(&self) -> String {
        let slo = self.outcome.slo.join(", ");
        let head = format!(
            "{} {} {} users, search {}",
            self.runtime,
            self.scenario,
            self.users,
            self.search + 1
        );
        match self.outcome.capacity_per_s {
            Some(c) => {
                let bracket = match (self.outcome.bracket_low, self.outcome.bracket_high) {
                    (Some(l), Some(h)) => {
                        format!("bracket {}–{}", rate_words(l), rate_words(h))
                    }
                    _ => "no bracket".to_owned(),
                };
                format!(
                    "{head}: {} at {slo} ({bracket}; {} steps, {:.0} s)",
                    rate_words(c),
                    self.outcome.steps,
                    self.seconds
                )
            }
            None => format!(
                "{head}: no capacity at {slo}: {}",
                self.outcome.reason.as_deref().unwrap_or("not found")
            ),
        }
    }
}

impl CapacitySummary {
    /// One line: `hyper: 9,540/s (9,310–9,780/s, 3 of 3 searches)`.
    pub fn sentence(&self) -> String {
        let interval = match (self.low_per_s, self.high_per_s) {
            (Some(l), Some(h)) => format!("{}–{}, ", rate_words(l), rate_words(h)),
            _ => String::new(),
        };
        let cores = match (self.cores_for_target, self.cores_low, self.cores_high) {
            (Some(c), Some(l), Some(h)) => format!("; {c:.2} cores for the target ({l:.2}–{h:.2})"),
            (Some(c), _, _) => format!("; {c:.2} cores for the target"),
            _ => String::new(),
        };
        let missing = if self.missing.is_empty() {
            String::new()
        } else {
            format!(" — {}", self.missing.join("; "))
        };
        match self.capacity_per_s {
            Some(c) => format!(
                "{}: {} ({interval}{} of {} searches){cores}{missing}",
                self.runtime,
                rate_words(c),
                self.found,
                self.searches
            ),
            None => format!(
                "{}: no capacity in {} searches{missing}",
                self.runtime, self.searches
            ),
        }
    }
}
