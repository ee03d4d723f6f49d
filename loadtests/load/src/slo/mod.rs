//! Capacity at a latency SLO: the highest open-loop rate at which every SLO (`p99<10ms`,
//! `errors<0.1%`) holds, found by search — the question a team provisions by, which a
//! peak-throughput figure does not answer.
//!
//! The search is a state machine that asks for one step at a time ([`Search::next_step`]) and is
//! told what the step measured ([`Search::record`]); whoever drives it runs the steps (`brigade
//! load --slo` against one server, `brigade compare --slo` interleaving several runtimes, each
//! step on a fresh server), so the logic is tested on a simulated server without a clock.
//!
//! **Every rate is judged on all that was measured at it** ([`evidence`]): a step measures
//! [`SearchSettings::windows`] sub-windows, each with an exact histogram; the steps at one rate
//! pool; and the rate is **held** when every SLO's upper bound (sub-windows as the unit) is inside
//! it, **failed** when one's lower bound is past it, and **not yet known** otherwise — then the
//! next step measures the same rate again, up to [`SearchSettings::max_windows`] sub-windows,
//! after which it counts as failed, saying so.
//!
//! **The search moves both ways** (a noisy bisection with backtracking, as Karp and Kleinberg's
//! noisy binary search checks its bracket before trusting it). Its bracket is always read from
//! every answer so far: the highest held rate below the lowest failed one.
//! 1. **ramp** from the start rate, ×2 while every rate held, ÷2 while every rate failed;
//! 2. **bisect** the bracket at its midpoint until its ends are within the precision (2%);
//! 3. **recheck** each end of the narrow bracket on a fresh visit (pooled with the earlier ones):
//!    an end whose answer turns moves the bracket — down when the low end fails, up when the high
//!    end holds — and the bisection goes on from there. A held rate above a failed one (a
//!    contradiction one stalled or lucky visit can make) is measured again, the thinner of the two
//!    first; if both reach the cap, the held one is set aside (a capacity cannot pass a rate that
//!    failed).
//!
//! The capacity is the low end once both ends have answered twice. A search is one sample of the
//! capacity: its interval comes from independent searches, each on its own fresh servers
//! ([`SloArgs::slo_searches`]), never from steps within one.
//!
//! A step the generator could not offer (its CPUs saturated, or fewer requests sent than the
//! schedule asked while every SLO held) ends the search with "generator-bound at R": that rate
//! measured the generator, so no capacity is claimed.

use serde::{Deserialize, Serialize};

use crate::threshold::{Figures, Threshold};

pub mod evidence;
pub mod load;
#[cfg(test)]
mod simulated;
pub mod stalls;

pub use evidence::{Answer, Pool, SloEvidence, WindowFigures};

/// The precision unless told: the bracket's ends within 2% of each other.
pub const DEFAULT_PRECISION: f64 = 0.02;
/// Sub-windows a step measures unless told.
pub const DEFAULT_WINDOWS: u32 = 4;
/// Sub-windows a rate may pool before "not yet known" counts as failed, unless told.
pub const DEFAULT_MAX_WINDOWS: u32 = 16;
/// Independent searches per runtime and cell unless told (the samples of the capacity).
pub const DEFAULT_SEARCHES: u32 = 3;
/// Visits each end of a narrow bracket needs before the search ends.
pub const RECHECK_VISITS: u32 = 2;
/// The ramp's factor per step.
pub const GROWTH: f64 = 2.0;
/// A step that completes less than this share of its offered rate was not offered in full.
pub const ACHIEVED_SHARE: f64 = 0.99;
/// Requests a step may complete beyond [`ACHIEVED_SHARE`]'s shortfall before it counts as not
/// offered in full: a window's two edges each cut a request, so 33 of the 33.6 that 0.4 s at 84/s
/// schedules (98.2%) is rounding, not a generator falling behind.
pub const EDGE_REQUESTS: f64 = 2.0;
/// The generator counts as saturated at this share of its threads' CPU (as compare judges its
/// CPUs).
pub const GENERATOR_SATURATED: f64 = 0.90;

/// How a search goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchSettings {
    /// The first rate offered, requests/s.
    pub start_per_s: f64,
    /// The bracket is narrow enough when high ÷ low − 1 is at most this (0.02 = 2%).
    pub precision: f64,
    /// Sub-windows one step measures.
    pub windows: u32,
    /// Sub-windows a rate may pool; past them, not yet known is failed.
    pub max_windows: u32,
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
            windows: DEFAULT_WINDOWS,
            max_windows: DEFAULT_MAX_WINDOWS,
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
        if self.windows == 0 || self.max_windows < self.windows.max(2) {
            anyhow::bail!(
                "--slo-windows must be at least 1 and --slo-max-windows at least 2 and at least                  --slo-windows"
            );
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
    /// The same rate again: its answer was not yet known.
    Extend,
    /// A bracket end (or one side of a contradiction) measured again on a fresh visit.
    Recheck,
    /// A confirmation window (reports written before the pooled search).
    Confirm,
}

impl Stage {
    /// Its name, as `report.json` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Ramp => "ramp",
            Stage::Bisect => "bisect",
            Stage::Extend => "extend",
            Stage::Recheck => "recheck",
            Stage::Confirm => "confirm",
        }
    }
}

/// What one step measured, as its driver saw it.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// The rate the step offered, requests/s.
    pub offered_per_s: f64,
    /// Requests completed per second of the measured window.
    pub achieved_per_s: f64,
    /// The window's totals.
    pub figures: Figures,
    /// Its sub-windows, each with an exact histogram (one for the whole window when the run kept
    /// none).
    pub windows: Vec<WindowFigures>,
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
    /// What a run at `offered_per_s` measured: its completed rate, totals and sub-windows (who set
    /// the pace, the server's CPU and contention are the driver's to add).
    pub fn from_result(offered_per_s: f64, result: &crate::result::LoadResult) -> Measured {
        let windows = if result.sub_windows.is_empty() {
            vec![WindowFigures {
                requests: result.total.requests,
                errors: result.total.errors.total(),
                latency: result.total.histogram().unwrap_or_default(),
            }]
        } else {
            result
                .sub_windows
                .iter()
                .map(|w| WindowFigures {
                    requests: w.requests,
                    errors: w.errors,
                    latency: crate::histogram::LatencyHistogram::decode(&w.histogram)
                        .unwrap_or_default(),
                })
                .collect()
        };
        Measured {
            offered_per_s,
            achieved_per_s: result.total.requests as f64 / result.elapsed_s.max(1e-9),
            figures: Figures::from(&result.total),
            windows,
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

/// One step on the latency–rate curve: what it measured alone, and the rate's pooled answer after
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The rate offered, requests/s.
    pub offered_per_s: f64,
    /// Requests completed per second.
    pub achieved_per_s: f64,
    /// Median latency of this step, ms (from the intended send time).
    pub p50_ms: f64,
    /// 99th percentile of this step, ms.
    pub p99_ms: f64,
    /// 99.9th percentile of this step, ms.
    pub p999_ms: f64,
    /// Failed requests of this step, percent of those sent.
    pub error_pct: f64,
    /// Whether the rate's answer after this step is held (and the rate was offered in full).
    pub held: bool,
    /// The search stage that asked for it.
    pub stage: Stage,
    /// The rate's answer after this step, on everything pooled at it.
    #[serde(default)]
    pub answer: Answer,
    /// Visits made at this rate so far, this one included.
    #[serde(default)]
    pub visits: u32,
    /// Sub-windows pooled at this rate so far.
    #[serde(default)]
    pub windows: u32,
    /// The pooled median at this rate, ms.
    #[serde(default)]
    pub pooled_p50_ms: f64,
    /// The pooled p99 at this rate, ms.
    #[serde(default)]
    pub pooled_p99_ms: f64,
    /// The pooled p99.9 at this rate, ms.
    #[serde(default)]
    pub pooled_p999_ms: f64,
    /// Every SLO judged on the pool: figure, bounds, limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<SloEvidence>,
    /// The server's CPU per request, µs, when sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_request: Option<f64>,
    /// What failed or is not yet known, in words, when the rate did not hold.
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
    /// The highest rate at which every SLO held, below every rate that failed, requests/s; `None`
    /// with a `reason` when none was found.
    pub capacity_per_s: Option<f64>,
    /// Why no capacity was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The bracket's low end at the end (the capacity, when one was found).
    pub bracket_low: Option<f64>,
    /// The bracket's high end at the end: the lowest rate that failed.
    pub bracket_high: Option<f64>,
    /// The rate the ramp started from, requests/s.
    pub start_per_s: f64,
    /// Steps taken.
    pub steps: u32,
    /// Every step, in the order taken.
    pub curve: Vec<CurvePoint>,
}

impl SearchOutcome {
    /// A search the stall probe refused: no step, the probe's reason.
    pub fn refused(slo: &[Threshold], start_per_s: f64, why: &str) -> SearchOutcome {
        SearchOutcome {
            slo: slo.iter().map(ToString::to_string).collect(),
            reason: Some(why.to_owned()),
            start_per_s,
            ..SearchOutcome::default()
        }
    }
}

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
    /// Which of the runtime's independent searches in this cell (0 for the first): searches with
    /// one number ran interleaved, one step each in turn.
    #[serde(default)]
    pub search: u32,
    /// The search's outcome: capacity, bracket, curve.
    #[serde(flatten)]
    pub outcome: SearchOutcome,
    /// Where the start rate came from, in words.
    pub start_from: String,
    /// How each step's server was made, in words.
    pub fresh: String,
    /// The machine's own pauses, probed just before this search (and the searches it ran beside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_probe: Option<stalls::StallProbe>,
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

    /// A search the machine's own stalls refused before it took a step.
    pub fn refused(&self) -> bool {
        self.outcome.steps == 0
            && self
                .stall_probe
                .as_ref()
                .is_some_and(|p| p.refused.is_some())
    }

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

/// A runtime's capacity over its independent searches in one cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CapacitySummary {
    /// The runtime.
    pub runtime: String,
    /// Searches made.
    pub searches: u32,
    /// Of those, the ones that found a capacity.
    pub found: u32,
    /// The geometric mean of the capacities found, requests/s.
    pub capacity_per_s: Option<f64>,
    /// Its interval (Student's t on the log capacities, [`SUMMARY_CONFIDENCE`]), only when every
    /// search found one and there are at least two.
    pub low_per_s: Option<f64>,
    /// The interval's high end.
    pub high_per_s: Option<f64>,
    /// Server CPUs for the target rate at the capacity, and at the interval's ends.
    pub cores_for_target: Option<f64>,
    /// Cores at the interval's high capacity (the fewest).
    pub cores_low: Option<f64>,
    /// Cores at the interval's low capacity (the most).
    pub cores_high: Option<f64>,
    /// Why searches found none, one line each.
    pub missing: Vec<String>,
}

/// The confidence of a capacity summary's interval.
pub const SUMMARY_CONFIDENCE: f64 = 0.95;

impl CapacitySummary {
    /// The summary of `searches` (one runtime's, one cell's).
    pub fn of(searches: &[&SloSearch]) -> CapacitySummary {
        let found: Vec<&SloSearch> = searches
            .iter()
            .copied()
            .filter(|s| s.outcome.capacity_per_s.is_some())
            .collect();
        let capacities: Vec<f64> = found
            .iter()
            .filter_map(|s| s.outcome.capacity_per_s)
            .collect();
        let all = brigade_stats::geometric_interval(&capacities, SUMMARY_CONFIDENCE);
        let centre = all.map(|i| i.0).or_else(|| capacities.first().copied());
        // An interval only when no search is missing from it.
        let interval = all.filter(|_| found.len() == searches.len());
        // Cores scale as 1 ÷ capacity: the ratio of one search's cores to its capacity holds for all.
        let per = found
            .iter()
            .find_map(|s| Some(s.cores_for_target? * s.outcome.capacity_per_s?));
        let cores = |c: Option<f64>| per.zip(c).map(|(p, c)| p / c);
        CapacitySummary {
            runtime: searches
                .first()
                .map_or(String::new(), |s| s.runtime.clone()),
            searches: searches.len() as u32,
            found: found.len() as u32,
            capacity_per_s: centre,
            low_per_s: interval.map(|i| i.1),
            high_per_s: interval.map(|i| i.2),
            cores_for_target: cores(centre),
            cores_low: cores(interval.map(|i| i.2)),
            cores_high: cores(interval.map(|i| i.1)),
            missing: searches
                .iter()
                .filter(|s| s.outcome.capacity_per_s.is_none())
                .map(|s| {
                    format!(
                        "search {}: {}",
                        s.search + 1,
                        s.outcome.reason.as_deref().unwrap_or("no capacity")
                    )
                })
                .collect(),
        }
    }

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
    /// The SLO search's precision, percent: bisect until the bracket's ends are this close
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_PRECISION * 100.0,
          value_parser = crate::parse::parse_percent)]
    pub slo_precision: f64,
    /// Sub-windows (of --duration each) one step measures; a rate is judged on all its steps'
    /// sub-windows pooled, the sub-window as the unit
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WINDOWS)]
    pub slo_windows: u32,
    /// Sub-windows a rate may pool while its answer is not yet known; past them it has failed
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_WINDOWS)]
    pub slo_max_windows: u32,
    /// Independent searches per runtime (compare: per runtime and cell, each on fresh servers):
    /// the samples of the capacity's interval
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SEARCHES, alias = "slo-repeats")]
    pub slo_searches: u32,
    /// Seconds of the stall probe before each round of searches (0: none)
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::parse::parse_duration)]
    pub slo_probe: std::time::Duration,
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
            windows: self.slo_windows,
            max_windows: self.slo_max_windows,
            ..SearchSettings::from_start(start_per_s)
        };
        settings.check()?;
        if self.slo_searches == 0 {
            anyhow::bail!("--slo-searches must be at least 1");
        }
        if let Some(rate) = self.slo_target_rate {
            crate::engine::check_rate("--slo-target-rate", rate)?;
        }
        Ok(settings)
    }
}
