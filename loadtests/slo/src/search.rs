//! The search itself: a state machine that asks for one step at a time ([`Search::next_step`]),
//! is told what the step measured ([`Search::record`]), and reads its next rate from every pool's
//! answer so far; and [`interleave`], which drives several searches one step each in turn.

use brigade_records::threshold::Threshold;

use crate::evidence::{Answer, Pool, SloEvidence};
use crate::outcome::{CurvePoint, SearchOutcome};
use crate::settings::{SearchSettings, ACHIEVED_SHARE, EDGE_REQUESTS, GROWTH, RECHECK_VISITS};
use crate::step::{Measured, Stage};
use crate::words::rate_words;

/// What the search does next, read from its pools.
#[derive(Debug, Clone, PartialEq)]
enum Next {
    Step(f64, Stage),
    Found(f64),
    Stop(String),
}

/// One runtime's search, one step at a time.
#[derive(Debug, Clone)]
pub struct Search {
    slo: Vec<Threshold>,
    settings: SearchSettings,
    pools: Vec<Pool>,
    /// The rate last measured (extended while not yet known).
    last: Option<f64>,
    next: Option<(f64, Stage)>,
    outcome: SearchOutcome,
}

impl Search {
    /// A search for the highest rate at which every one of `slo` holds.
    pub fn new(slo: Vec<Threshold>, settings: SearchSettings) -> Search {
        let outcome = SearchOutcome {
            slo: slo.iter().map(ToString::to_string).collect(),
            start_per_s: settings.start_per_s,
            ..SearchOutcome::default()
        };
        Search {
            next: Some((settings.start_per_s, Stage::Ramp)),
            slo,
            settings,
            pools: Vec::new(),
            last: None,
            outcome,
        }
    }

    /// The next rate to offer and its stage; `None` once the search is over.
    pub fn next_step(&self) -> Option<(f64, Stage)> {
        self.next
    }

    /// Whether the search is over.
    pub fn is_done(&self) -> bool {
        self.next.is_none()
    }

    /// What the search found so far (all of it once [`Search::is_done`]).
    pub fn outcome(&self) -> &SearchOutcome {
        &self.outcome
    }

    /// The search's result.
    pub fn into_outcome(self) -> SearchOutcome {
        self.outcome
    }

    /// Records what the step [`Search::next_step`] asked for measured, and moves on.
    pub fn record(&mut self, measured: &Measured) {
        let Some((rate, stage)) = self.next else {
            return;
        };
        self.outcome.steps += 1;
        if let Some(why) = &measured.failed {
            return self.stop(format!(
                "the step at {} could not be measured: {why}",
                rate_words(rate)
            ));
        }
        let at = match self.pools.iter().position(|p| p.rate == rate) {
            Some(at) => at,
            None => {
                self.pools.push(Pool::new(rate));
                self.pools.len() - 1
            }
        };
        self.pools[at].add(&measured.windows, &self.slo);
        self.last = Some(rate);
        let (answer, evidence, why) = self.pools[at].judge(&self.slo, self.max_windows());
        let pool = &self.pools[at];
        self.outcome
            .curve
            .push(point(measured, stage, pool, answer, evidence, why));
        if let Some(why) = self.generator_bound(measured) {
            return self.stop(format!("generator-bound at {}: {why}", rate_words(rate)));
        }
        self.settle();
        if !self.is_done() && self.outcome.steps >= self.settings.max_steps {
            self.stop(format!(
                "stopped after {} steps, the most a search may take",
                self.outcome.steps
            ));
        }
    }

    fn max_windows(&self) -> usize {
        self.settings.max_windows as usize
    }

    /// Each pool's answer now.
    fn answers(&self) -> Vec<Answer> {
        self.pools
            .iter()
            .map(|p| p.judge(&self.slo, self.max_windows()).0)
            .collect()
    }

    /// Decides the next step (or the end) from every pool, setting contradictions aside first.
    fn settle(&mut self) {
        loop {
            match self.plan() {
                Ok(Next::Step(rate, stage)) => {
                    self.next = Some((rate, stage));
                    return;
                }
                Ok(Next::Found(capacity)) => {
                    self.outcome.capacity_per_s = Some(capacity);
                    self.next = None;
                    return;
                }
                Ok(Next::Stop(why)) => return self.stop(why),
                // A contradiction both sides of which reached the cap: the held rate is set aside.
                Err(overrule) => self.pools[overrule].overruled = true,
            }
        }
    }

    /// The next step from the pools' answers; `Err(i)` asks to overrule pool `i`'s held answer.
    fn plan(&mut self) -> Result<Next, usize> {
        let answers = self.answers();
        let cap = self.max_windows();
        // 1. A rate not yet known is measured again, as long as it was the one just measured.
        if let Some(i) = self
            .last
            .and_then(|r| self.pools.iter().position(|p| p.rate == r))
        {
            if answers[i] == Answer::NotYetKnown {
                return Ok(Next::Step(self.pools[i].rate, Stage::Extend));
            }
        }
        let held = |i: &usize| answers[*i] == Answer::Held;
        let failed = |i: &usize| answers[*i] == Answer::Failed;
        let rate = |i: usize| self.pools[i].rate;
        let by_rate = |a: &usize, b: &usize| rate(*a).total_cmp(&rate(*b));
        let top_held = (0..self.pools.len()).filter(held).max_by(by_rate);
        let low_failed = (0..self.pools.len()).filter(failed).min_by(by_rate);
        // 2. A held rate above a failed one: measure the thinner of the two again.
        if let (Some(h), Some(f)) = (top_held, low_failed) {
            if rate(h) > rate(f) {
                let (hw, fw) = (self.pools[h].windows(), self.pools[f].windows());
                return if hw < cap && hw <= fw {
                    Ok(Next::Step(rate(h), Stage::Recheck))
                } else if fw < cap {
                    Ok(Next::Step(rate(f), Stage::Recheck))
                } else {
                    Err(h)
                };
            }
        }
        self.outcome.bracket_low = top_held.map(rate);
        self.outcome.bracket_high = low_failed.map(rate);
        Ok(match (top_held, low_failed) {
            (None, _) => {
                let lowest = self.pools.iter().map(|p| p.rate).fold(f64::MAX, f64::min);
                if lowest / GROWTH < self.settings.floor_per_s {
                    Next::Stop(format!(
                        "the SLO fails even at {}, the lowest rate the search may offer",
                        rate_words(lowest)
                    ))
                } else {
                    Next::Step(lowest / GROWTH, Stage::Ramp)
                }
            }
            (Some(h), None) => {
                if rate(h) * GROWTH > self.settings.ceiling_per_s {
                    Next::Stop(format!(
                        "every SLO holds at {}, the highest rate the search may offer",
                        rate_words(rate(h))
                    ))
                } else {
                    Next::Step(rate(h) * GROWTH, Stage::Ramp)
                }
            }
            (Some(h), Some(f)) => {
                let (low, high) = (rate(h), rate(f));
                if high > low * (1.0 + self.settings.precision) {
                    Next::Step((low + high) / 2.0, Stage::Bisect)
                } else if self.pools[h].visits < RECHECK_VISITS {
                    Next::Step(low, Stage::Recheck)
                } else if self.pools[f].visits < RECHECK_VISITS {
                    Next::Step(high, Stage::Recheck)
                } else {
                    Next::Found(low)
                }
            }
        })
    }

    /// Why the step measured the generator, if it did: its CPUs saturated, or, with every SLO
    /// held over the step, fewer requests completed than the schedule offered (past the edges'
    /// rounding) (a server that cannot keep up fails its latency SLO instead, since latency counts
    /// from the intended send time).
    fn generator_bound(&self, measured: &Measured) -> Option<String> {
        if let Some(why) = &measured.generator_bound {
            return Some(why.clone());
        }
        let held = self.slo.iter().all(|t| t.check(&measured.figures).passed);
        let requests = measured.figures.requests as f64;
        // One request's share of the completed rate (1 ÷ the window's seconds); none completed
        // is short whatever the window.
        let per_request = if requests > 0.0 {
            measured.achieved_per_s / requests
        } else {
            0.0
        };
        let short = measured.achieved_per_s + EDGE_REQUESTS * per_request
            < ACHIEVED_SHARE * measured.offered_per_s;
        (held && short).then(|| {
            format!(
                "{:.0}/s completed of the {:.0}/s offered with every SLO held",
                measured.achieved_per_s, measured.offered_per_s
            )
        })
    }

    /// Ends the search with `reason` and no capacity, whatever its bracket: a step that measured
    /// the generator, or nothing, leaves the search without a figure to claim.
    fn stop(&mut self, reason: String) {
        self.outcome.reason = Some(reason);
        self.outcome.capacity_per_s = None;
        self.next = None;
    }
}

/// The curve's point for a step at `pool`'s rate, with the rate's answer after it.
fn point(
    measured: &Measured,
    stage: Stage,
    pool: &Pool,
    answer: Answer,
    evidence: Vec<SloEvidence>,
    why: String,
) -> CurvePoint {
    let f = &measured.figures;
    let pooled = pool.latency().latency();
    CurvePoint {
        offered_per_s: measured.offered_per_s,
        achieved_per_s: measured.achieved_per_s,
        p50_ms: f.latency.p50_ms,
        p99_ms: f.latency.p99_ms,
        p999_ms: f.latency.p999_ms,
        error_pct: if f.requests == 0 {
            0.0
        } else {
            100.0 * f.errors as f64 / f.requests as f64
        },
        held: answer == Answer::Held,
        stage,
        answer,
        visits: pool.visits,
        windows: pool.windows() as u32,
        pooled_p50_ms: pooled.p50_ms,
        pooled_p99_ms: pooled.p99_ms,
        pooled_p999_ms: pooled.p999_ms,
        evidence,
        server_cpu_us_per_request: measured.server_cpu_us_per_request,
        why: (!why.is_empty()).then_some(why),
        contended: measured.contended.clone(),
    }
}

/// Drives several searches to their end, one step each per round, the order rotating by one from
/// round to round so that no search always goes first; `step(i, rate, stage)` runs search `i`'s
/// step and says what it measured.
pub fn interleave(searches: &mut [Search], mut step: impl FnMut(usize, f64, Stage) -> Measured) {
    let mut round = 0usize;
    loop {
        let active: Vec<usize> = (0..searches.len())
            .filter(|&i| !searches[i].is_done())
            .collect();
        if active.is_empty() {
            return;
        }
        for k in 0..active.len() {
            let i = active[(k + round) % active.len()];
            if let Some((rate, stage)) = searches[i].next_step() {
                let measured = step(i, rate, stage);
                searches[i].record(&measured);
            }
        }
        round += 1;
    }
}
