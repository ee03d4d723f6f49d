//! Capacity at a latency SLO: the highest open-loop rate at which every SLO (`p99<10ms`,
//! `errors<0.1%`) holds over a measured window, found by search — the question a team provisions
//! by, which a peak-throughput figure does not answer.
//!
//! The search is a state machine that asks for one step at a time ([`Search::next_step`]) and is
//! told what the step measured ([`Search::record`]); whoever drives it runs the steps (`brigade
//! load --slo` against one server, `brigade compare --slo` interleaving several runtimes, each
//! step on a fresh server), so the logic is tested on a simulated server without a clock. It goes
//! as Envoy's Nighthawk adaptive controller does, with a confirmation added:
//! 1. **ramp**: from the start rate, double while every SLO holds, halve while it fails, until a
//!    held rate and a failed one bracket the capacity;
//! 2. **bisect** the bracket (its midpoint each step) until its ends are within the precision
//!    (2% by default) of each other;
//! 3. **confirm**: [`SearchSettings::confirm_windows`] windows at the bracket's low end, every one
//!    must hold; on a failure step down by the precision and confirm again, each further step
//!    down twice the last (up to 16× the precision), since a latency that fails at the bracket
//!    is too noisy to hold a step below it. The rate confirmed is the capacity.
//! 4. **repeat** the confirmation ([`SearchSettings::repeats`] in all), each later one starting one
//!    step above the capacity and stepping down as the first: the rates they confirm are samples
//!    of the capacity for an interval (the bracket is the search's precision, not a confidence
//!    interval), landing above the capacity when the machine is kind and below when it is not.
//!
//! A step the generator could not offer (its CPUs saturated, or fewer requests sent than the
//! schedule asked while every SLO held) ends the search with "generator-bound at R": that rate
//! measured the generator, so no capacity is claimed.

use serde::{Deserialize, Serialize};

use crate::threshold::{Figures, Threshold};

pub mod load;
#[cfg(test)]
mod simulated;

/// The precision unless told: the bracket's ends within 2% of each other.
pub const DEFAULT_PRECISION: f64 = 0.02;
/// Windows of a confirmation unless told.
pub const DEFAULT_CONFIRM_WINDOWS: u32 = 3;
/// Confirmations per search unless told (the first gives the capacity, all give its interval).
pub const DEFAULT_REPEATS: u32 = 3;
/// The ramp's factor per step.
pub const GROWTH: f64 = 2.0;
/// A step that completes less than this share of its offered rate was not offered in full.
pub const ACHIEVED_SHARE: f64 = 0.99;
/// Requests a step may complete beyond [`ACHIEVED_SHARE`]'s shortfall before it counts as not
/// offered in full: a window's two edges each cut a request, so 33 of the 33.6 that 0.4 s at 84/s
/// schedules (98.2%) is rounding, not a generator falling behind.
pub const EDGE_REQUESTS: f64 = 2.0;
/// Step-downs one confirmation may take before the search says it could not confirm.
pub const MAX_STEP_DOWNS: u32 = 8;
/// A capacity confirmed below this share of the bracket's low end comes with a note on stalls.
pub const STALLS_SHARE: f64 = 0.7;
/// A confirmation's step down doubles after each failure, at most this many times (2% → 32%).
pub const STEP_DOUBLINGS: u32 = 4;
/// The generator counts as saturated at this share of its threads' CPU (as compare judges its
/// CPUs).
pub const GENERATOR_SATURATED: f64 = 0.90;

/// How a search goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchSettings {
    /// The first rate offered, requests/s.
    pub start_per_s: f64,
    /// The bracket is narrow enough when high ÷ low − 1 is at most this (0.02 = 2%); also the
    /// confirmation's step.
    pub precision: f64,
    /// Windows of one confirmation, every one must hold.
    pub confirm_windows: u32,
    /// Confirmations in all (at least 1).
    pub repeats: u32,
    /// The ramp stops going down below this rate, requests/s.
    pub floor_per_s: f64,
    /// The ramp stops going up above this rate, requests/s.
    pub ceiling_per_s: f64,
    /// The most steps one search may take.
    pub max_steps: u32,
}

impl SearchSettings {
    /// The defaults from `start_per_s`.
    pub fn from_start(start_per_s: f64) -> SearchSettings {
        SearchSettings {
            start_per_s,
            precision: DEFAULT_PRECISION,
            confirm_windows: DEFAULT_CONFIRM_WINDOWS,
            repeats: DEFAULT_REPEATS,
            floor_per_s: 1.0,
            ceiling_per_s: 10_000_000.0,
            max_steps: 60,
        }
    }

    /// Refuses settings no search can run with.
    pub fn check(&self) -> anyhow::Result<()> {
        crate::engine::check_rate("--slo-start", self.start_per_s)?;
        if !(self.precision > 0.0 && self.precision < 0.5) {
            anyhow::bail!("--slo-precision must be above 0% and below 50%");
        }
        if self.confirm_windows == 0 || self.repeats == 0 {
            anyhow::bail!("--slo-confirm and --slo-repeats must be at least 1");
        }
        Ok(())
    }
}

/// Which stage of the search a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The exponential ramp.
    Ramp,
    /// The bisection of the bracket.
    Bisect,
    /// A confirmation window (`repeat` 0 is the one that gives the capacity).
    Confirm,
}

impl Stage {
    /// Its name, as `report.json` writes it (`ramp`, `bisect`, `confirm`).
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Ramp => "ramp",
            Stage::Bisect => "bisect",
            Stage::Confirm => "confirm",
        }
    }
}

/// What one step measured, as its driver saw it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// The rate the step offered, requests/s.
    pub offered_per_s: f64,
    /// Requests completed per second of the measured window.
    pub achieved_per_s: f64,
    /// The window's totals, checked against the SLOs.
    pub figures: Figures,
    /// Why the generator, not the server, set the pace, if it did (its CPUs saturated).
    pub generator_bound: Option<String>,
    /// The server's CPU per request over the window, µs, when it was sampled.
    pub server_cpu_us_per_request: Option<f64>,
    /// Why the step measured nothing (a server that did not start), if so.
    pub failed: Option<String>,
    /// Why other processes' CPU use makes the step's figures suspect, if it does (the step still
    /// counts: its latency includes the contention, as a user's would).
    pub contended: Option<String>,
}

impl Measured {
    /// What a run at `offered_per_s` measured: its completed rate and totals (who set the pace,
    /// the server's CPU and contention are the driver's to add).
    pub fn from_result(offered_per_s: f64, result: &crate::result::LoadResult) -> Measured {
        Measured {
            offered_per_s,
            achieved_per_s: result.total.requests as f64 / result.elapsed_s.max(1e-9),
            figures: Figures::from(&result.total),
            ..Measured::default()
        }
    }

    /// A step at `offered_per_s` that measured nothing, and why.
    pub fn failed(offered_per_s: f64, why: String) -> Measured {
        Measured {
            offered_per_s,
            failed: Some(why),
            ..Measured::default()
        }
    }
}

/// One tested rate on the latency–rate curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The rate offered, requests/s.
    pub offered_per_s: f64,
    /// Requests completed per second.
    pub achieved_per_s: f64,
    /// Median latency, ms (from the intended send time).
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Failed requests, percent of those sent.
    pub error_pct: f64,
    /// Whether every SLO held (and the rate was offered in full).
    pub held: bool,
    /// The search stage that asked for it.
    pub stage: Stage,
    /// The server's CPU per request, µs, when sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_request: Option<f64>,
    /// What failed, in words (`p99 = 14 ms (wanted < 10 ms)`), when it did not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Other processes took CPU on a side during the step, in words, if they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contended: Option<String>,
}

/// A finished search: the capacity (or why there is none), its bracket and its curve.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchOutcome {
    /// The SLOs, as given.
    pub slo: Vec<String>,
    /// The highest rate at which every SLO held in every confirmation window, requests/s; `None`
    /// with a `reason` when none was found.
    pub capacity_per_s: Option<f64>,
    /// Why no capacity was found, or what limits the one found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The highest rate that held before the confirmation.
    pub bracket_low: Option<f64>,
    /// The lowest rate that failed before the confirmation.
    pub bracket_high: Option<f64>,
    /// Whether the first confirmation held all its windows at the capacity.
    pub confirmed: bool,
    /// The rate each confirmation confirmed, in order (the first is the capacity): the samples of
    /// the capacity's interval.
    pub repeats: Vec<f64>,
    /// The rate the ramp started from, requests/s.
    pub start_per_s: f64,
    /// Steps taken.
    pub steps: u32,
    /// Every tested rate, in the order tested.
    pub curve: Vec<CurvePoint>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Ramp {
        rate: f64,
    },
    Bisect,
    Confirm {
        repeat: u32,
        rate: f64,
        held: u32,
        downs: u32,
    },
    Done,
}

/// One runtime's search, one step at a time.
#[derive(Debug, Clone)]
pub struct Search {
    slo: Vec<Threshold>,
    settings: SearchSettings,
    phase: Phase,
    low: Option<f64>,
    high: Option<f64>,
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
            phase: Phase::Ramp {
                rate: settings.start_per_s,
            },
            slo,
            settings,
            low: None,
            high: None,
            outcome,
        }
    }

    /// The next rate to offer and its stage; `None` once the search is over.
    pub fn next_step(&self) -> Option<(f64, Stage)> {
        match self.phase {
            Phase::Ramp { rate } => Some((rate, Stage::Ramp)),
            Phase::Bisect => {
                let (low, high) = (self.low?, self.high?);
                Some(((low + high) / 2.0, Stage::Bisect))
            }
            Phase::Confirm { rate, .. } => Some((rate, Stage::Confirm)),
            Phase::Done => None,
        }
    }

    /// Whether the search is over.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
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
        let Some((rate, stage)) = self.next_step() else {
            return;
        };
        self.outcome.steps += 1;
        if let Some(why) = &measured.failed {
            self.abandon(format!(
                "the step at {} could not be measured: {why}",
                rate_words(rate)
            ));
            return;
        }
        let (held, why) = self.judge(measured);
        self.outcome.curve.push(point(measured, held, stage, why));
        if let Some(why) = self.generator_bound(measured, held) {
            self.abandon(format!("generator-bound at {}: {why}", rate_words(rate)));
            return;
        }
        match self.phase {
            Phase::Ramp { .. } => self.ramp(rate, held),
            Phase::Bisect => {
                if held {
                    self.low = Some(rate);
                } else {
                    self.high = Some(rate);
                }
                self.bracketed();
            }
            Phase::Confirm {
                repeat,
                rate,
                held: windows,
                downs,
            } => self.confirm(held, repeat, rate, windows, downs),
            Phase::Done => {}
        }
        if !self.is_done() && self.outcome.steps >= self.settings.max_steps {
            self.stop(format!(
                "stopped after {} steps, the most a search may take",
                self.outcome.steps
            ));
        }
    }

    /// A ramp step at `rate` has been judged: widen the bracket, or double or halve the rate.
    fn ramp(&mut self, rate: f64, held: bool) {
        if held {
            self.low = Some(self.low.map_or(rate, |l: f64| l.max(rate)));
        } else {
            self.high = Some(self.high.map_or(rate, |h: f64| h.min(rate)));
        }
        match (self.low, self.high) {
            (Some(_), Some(_)) => self.bracketed(),
            (Some(_), None) if rate * GROWTH > self.settings.ceiling_per_s => self.stop(format!(
                "every SLO holds at {}, the highest rate the search may offer",
                rate_words(rate)
            )),
            (Some(_), None) => {
                self.phase = Phase::Ramp {
                    rate: rate * GROWTH,
                }
            }
            (None, _) if rate / GROWTH < self.settings.floor_per_s => self.stop(format!(
                "the SLO fails even at {}, the lowest rate the search may offer",
                rate_words(rate)
            )),
            (None, _) => {
                self.phase = Phase::Ramp {
                    rate: rate / GROWTH,
                }
            }
        }
    }

    /// Window `windows` of confirmation `repeat` at `rate` has been judged (`downs` steps down
    /// so far): the next window, the capacity confirmed, or a step down.
    fn confirm(&mut self, held: bool, repeat: u32, rate: f64, windows: u32, downs: u32) {
        if held && windows + 1 < self.settings.confirm_windows {
            self.phase = Phase::Confirm {
                repeat,
                rate,
                held: windows + 1,
                downs,
            };
        } else if held {
            self.confirmed(repeat, rate);
        } else if downs + 1 > MAX_STEP_DOWNS {
            self.unconfirmed(repeat, rate);
        } else {
            // Each step down doubles (2%, 4%, 8%, then 16% at most): a latency too noisy
            // to hold near the bracket reaches a rate that holds in a few steps.
            let step = self.settings.precision * f64::from(1u32 << downs.min(STEP_DOUBLINGS));
            self.phase = Phase::Confirm {
                repeat,
                rate: rate * (1.0 - step.min(0.5)),
                held: 0,
                downs: downs + 1,
            };
        }
    }

    /// Every SLO checked against the step, and the failures in words.
    fn judge(&self, measured: &Measured) -> (bool, Option<String>) {
        let failed: Vec<String> = self
            .slo
            .iter()
            .map(|t| t.check(&measured.figures))
            .filter(|c| !c.passed)
            .map(|c| c.text)
            .collect();
        if failed.is_empty() {
            (true, None)
        } else {
            (false, Some(failed.join("; ")))
        }
    }

    /// Why the step measured the generator, if it did: its CPUs saturated, or, with every SLO
    /// held, fewer requests completed than the schedule offered (past the edges' rounding) (a server that cannot keep up
    /// fails its latency SLO instead, since latency counts from the intended send time).
    fn generator_bound(&self, measured: &Measured, held: bool) -> Option<String> {
        if let Some(why) = &measured.generator_bound {
            return Some(why.clone());
        }
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

    /// The bracket is made: bisect it, or confirm once it is narrow enough.
    fn bracketed(&mut self) {
        let (Some(low), Some(high)) = (self.low, self.high) else {
            return;
        };
        self.outcome.bracket_low = Some(low);
        self.outcome.bracket_high = Some(high);
        if high <= low * (1.0 + self.settings.precision) || high <= low {
            self.phase = Phase::Confirm {
                repeat: 0,
                rate: low,
                held: 0,
                downs: 0,
            };
        } else {
            self.phase = Phase::Bisect;
        }
    }

    /// Confirmation `repeat` held all its windows at `rate`.
    fn confirmed(&mut self, repeat: u32, rate: f64) {
        self.outcome.repeats.push(rate);
        if repeat == 0 {
            self.outcome.capacity_per_s = Some(rate);
            self.outcome.confirmed = true;
            self.outcome.reason = self.stalls_note(rate);
        }
        self.next_repeat(repeat);
    }

    /// When the first confirmation held only far below the bracket, why: the SLO failed in
    /// windows at rates the bisection had seen hold, so latency there is set by stalls that do not
    /// depend on the rate (a 20 ms pause fails a p99 of 10 ms in any 2 s window), and the capacity
    /// measures the machine more than the server.
    fn stalls_note(&self, capacity: f64) -> Option<String> {
        let low = self.low?;
        if capacity >= STALLS_SHARE * low {
            return None;
        }
        let below: Vec<&CurvePoint> = self
            .outcome
            .curve
            .iter()
            .filter(|p| p.offered_per_s <= low && p.offered_per_s > capacity)
            .collect();
        let failed = below.iter().filter(|p| !p.held).count();
        Some(format!(
            "confirmed {:.0}% below the bracket ({}): {failed} of {} windows between the two \
             failed the SLO, so latency here has stalls that do not depend on the rate; a longer \
             --duration or a looser SLO makes a stall a smaller share of a window",
            (1.0 - capacity / low) * 100.0,
            rate_words(low),
            below.len()
        ))
    }

    /// Confirmation `repeat` stepped down as far as it may without holding.
    fn unconfirmed(&mut self, repeat: u32, rate: f64) {
        if repeat == 0 {
            self.stop(format!(
                "not confirmed: no rate from {} down to {} held {} windows in a row",
                rate_words(self.low.unwrap_or(rate)),
                rate_words(rate),
                self.settings.confirm_windows
            ));
            return;
        }
        self.next_repeat(repeat);
    }

    /// The next confirmation, one step above the capacity, or the end.
    fn next_repeat(&mut self, repeat: u32) {
        let Some(capacity) = self.outcome.capacity_per_s else {
            return self.stop("not confirmed".to_owned());
        };
        if repeat + 1 >= self.settings.repeats {
            self.phase = Phase::Done;
            return;
        }
        self.phase = Phase::Confirm {
            repeat: repeat + 1,
            rate: capacity * (1.0 + self.settings.precision),
            held: 0,
            downs: 0,
        };
    }

    /// Ends the search with `reason`, keeping what it confirmed.
    fn stop(&mut self, reason: String) {
        self.outcome.reason = Some(reason);
        self.phase = Phase::Done;
    }

    /// Ends the search with `reason` and no capacity, whatever it confirmed before: a step that
    /// measured the generator, or nothing, leaves the search without a figure to claim.
    fn abandon(&mut self, reason: String) {
        self.outcome.capacity_per_s = None;
        self.outcome.confirmed = false;
        self.stop(reason);
    }
}

/// The curve's point for a step.
fn point(measured: &Measured, held: bool, stage: Stage, why: Option<String>) -> CurvePoint {
    let f = &measured.figures;
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
        held,
        stage,
        server_cpu_us_per_request: measured.server_cpu_us_per_request,
        why,
        contended: measured.contended.clone(),
    }
}

/// `12,345/s`, `15.2/s`: a rate as the search's sentences give it.
pub fn rate_words(rate: f64) -> String {
    if rate >= 100.0 {
        format!("{}/s", crate::table::grouped(rate.round() as u64))
    } else {
        format!("{rate:.1}/s")
    }
}

/// One search as reports write it: what was searched, its outcome, and what it costs to serve a
/// target rate at that capacity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SloSearch {
    /// The runtime searched (`target` for a server `brigade load` did not start).
    pub runtime: String,
    /// The scenario.
    pub scenario: String,
    /// Connections sending the open-loop schedule.
    pub users: u32,
    /// Documents preloaded per collection.
    #[serde(default)]
    pub preload: u64,
    /// The search's outcome: capacity, bracket, confirmation, curve.
    #[serde(flatten)]
    pub outcome: SearchOutcome,
    /// Where the start rate came from, in words.
    pub start_from: String,
    /// How each step's server was made, in words.
    pub fresh: String,
    /// The CPUs the server ran on, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<u32>,
    /// The capacity per server CPU, requests/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_per_cpu: Option<f64>,
    /// `--slo-target-rate`, requests/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rate_per_s: Option<f64>,
    /// Server CPUs needed for the target rate at this capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_for_target: Option<f64>,
    /// Wall-clock time the search took, seconds (its steps, servers started included).
    pub seconds: f64,
}

impl SloSearch {
    /// Fills the per-CPU figures from the capacity, `server_cpus` and `target_rate_per_s`.
    pub fn size(&mut self, server_cpus: Option<u32>, target_rate_per_s: Option<f64>) {
        self.server_cpus = server_cpus;
        self.target_rate_per_s = target_rate_per_s;
        self.capacity_per_cpu = match (self.outcome.capacity_per_s, server_cpus) {
            (Some(c), Some(n)) if n > 0 => Some(c / f64::from(n)),
            _ => None,
        };
        self.cores_for_target = match (self.capacity_per_cpu, target_rate_per_s) {
            (Some(per_cpu), Some(target)) if per_cpu > 0.0 => Some(target / per_cpu),
            _ => None,
        };
    }

    /// One line: `hyper waiter 20 users: 9,540/s at p99<10ms (bracket 9,450–9,600/s, confirmed)`.
    pub fn sentence(&self) -> String {
        let slo = self.outcome.slo.join(", ");
        let head = format!("{} {} {} users", self.runtime, self.scenario, self.users);
        match self.outcome.capacity_per_s {
            Some(c) => {
                let bracket = match (self.outcome.bracket_low, self.outcome.bracket_high) {
                    (Some(l), Some(h)) => {
                        format!("bracket {}–{}", rate_words(l), rate_words(h))
                    }
                    _ => "no bracket".to_owned(),
                };
                let repeats = self
                    .outcome
                    .repeats
                    .iter()
                    .map(|r| rate_words(*r))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!(
                    "{head}: {} at {slo} ({bracket}; confirmations {repeats}; {} steps, {:.0} s)",
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

/// The SLO search's flags, shared by `brigade load` and `brigade compare`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SloArgs {
    /// Find the highest open-loop rate at which this SLO holds, e.g. `p99<10ms`, `p99.9<50ms`,
    /// `errors<0.1%` (repeatable: every one must hold; upper bounds on mean, p50, p90, p99,
    /// p99.9, max or errors)
    #[arg(long = "slo", value_name = "EXPR")]
    pub slo: Vec<String>,
    /// The SLO search's first rate, requests/s [default: half the rate a closed-loop run at the
    /// same connections completes]
    #[arg(long, value_name = "PER_S", value_parser = crate::parse::parse_rate)]
    pub slo_start: Option<f64>,
    /// The SLO search's precision, percent: bisect until the bracket's ends are this close, and
    /// step down by it when a confirmation window fails
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_PRECISION * 100.0,
          value_parser = crate::parse::parse_percent)]
    pub slo_precision: f64,
    /// Windows of a confirmation at the found rate, every one must hold
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONFIRM_WINDOWS)]
    pub slo_confirm: u32,
    /// Confirmations per search: the first gives the capacity, all of them its interval
    #[arg(long, value_name = "N", default_value_t = DEFAULT_REPEATS)]
    pub slo_repeats: u32,
    /// Say how many server CPUs this many requests/s needs at the capacity found
    #[arg(long, value_name = "PER_S", value_parser = crate::parse::parse_rate)]
    pub slo_target_rate: Option<f64>,
}

impl SloArgs {
    /// The SLOs, parsed and checked; empty when no `--slo` was given.
    pub fn slos(&self) -> anyhow::Result<Vec<Threshold>> {
        self.slo
            .iter()
            .map(|t| crate::threshold::parse_slo(t))
            .collect()
    }

    /// The search's settings from `start_per_s` (the `--slo-start`, or the caller's).
    pub fn settings(&self, start_per_s: f64) -> anyhow::Result<SearchSettings> {
        let settings = SearchSettings {
            precision: self.slo_precision / 100.0,
            confirm_windows: self.slo_confirm,
            repeats: self.slo_repeats,
            ..SearchSettings::from_start(start_per_s)
        };
        settings.check()?;
        if let Some(rate) = self.slo_target_rate {
            crate::engine::check_rate("--slo-target-rate", rate)?;
        }
        Ok(settings)
    }
}
