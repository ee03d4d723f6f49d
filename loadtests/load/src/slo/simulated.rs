//! The search on a simulated server whose capacity is known: an M/M/1 queue (its p99 response
//! time is ln(100) ÷ (μ − λ)) whose service rate μ wobbles from step to step by a seeded noise, so
//! the true capacity at an SLO is known and no test waits on a clock.

use super::*;
use crate::result::Latency;
use crate::threshold::parse_slo;

/// A simulated server.
struct Queue {
    /// Requests/s it serves at full tilt.
    service_per_s: f64,
    /// The step-to-step wobble of the service rate, a fraction (0.01 = ±1% standard deviation).
    noise: f64,
    /// Errors, percent, once the offered rate passes this.
    errors_above: Option<(f64, f64)>,
    /// The generator saturates above this rate.
    generator_limit: Option<f64>,
    rng: fastrand::Rng,
}

impl Queue {
    fn new(service_per_s: f64, noise: f64, seed: u64) -> Queue {
        Queue {
            service_per_s,
            noise,
            errors_above: None,
            generator_limit: None,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// One standard normal draw (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.rng.f64().max(1e-12), self.rng.f64());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// What a 2-second window at `offered` measures.
    fn step(&mut self, offered: f64) -> Measured {
        let mu = self.service_per_s * (1.0 + self.noise * self.normal());
        let window_s = 2.0;
        let (achieved, p99_ms) = if offered < mu {
            (offered, 100f64.ln() / (mu - offered) * 1000.0)
        } else {
            // Overloaded: the queue grows all window long (at least a second behind by its end).
            (mu, 1000.0 + window_s * 1000.0 * (1.0 - mu / offered))
        };
        let requests = (achieved * window_s) as u64;
        let error_pct = match self.errors_above {
            Some((above, pct)) if offered > above => pct,
            _ => 0.0,
        };
        Measured {
            offered_per_s: offered,
            achieved_per_s: achieved,
            figures: Figures {
                requests,
                errors: (requests as f64 * error_pct / 100.0) as u64,
                hits_per_s: achieved,
                latency: Latency {
                    mean_ms: p99_ms / 4.6,
                    p50_ms: p99_ms * 0.15,
                    p90_ms: p99_ms * 0.5,
                    p99_ms,
                    p999_ms: p99_ms * 1.5,
                    max_ms: p99_ms * 2.0,
                },
            },
            generator_bound: self
                .generator_limit
                .filter(|&limit| offered > limit)
                .map(|_| "its CPUs were 99% busy".to_owned()),
            server_cpu_us_per_request: Some(1e6 / mu),
            failed: None,
            contended: None,
        }
    }
}

/// The rate at which the queue's p99 equals `p99_ms` without noise.
fn true_capacity(service_per_s: f64, p99_ms: f64) -> f64 {
    service_per_s - 100f64.ln() / (p99_ms / 1000.0)
}

fn search(queue: &mut Queue, slo: &[&str], start: f64) -> SearchOutcome {
    let slo = slo.iter().map(|s| parse_slo(s).unwrap()).collect();
    let mut search = Search::new(slo, SearchSettings::from_start(start));
    while let Some((rate, _)) = search.next_step() {
        let measured = queue.step(rate);
        search.record(&measured);
    }
    search.into_outcome()
}

#[test]
fn the_search_lands_near_the_known_capacity_and_confirms_it() {
    let mut queue = Queue::new(10_000.0, 0.005, 7);
    let found = search(&mut queue, &["p99<10ms"], 1_000.0);
    let truth = true_capacity(10_000.0, 10.0);
    let capacity = found.capacity_per_s.expect("a capacity");
    assert!(
        (capacity / truth - 1.0).abs() < 0.03,
        "found {capacity:.0}/s, the truth is {truth:.0}/s: {found:?}"
    );
    assert!(found.confirmed);
    let (low, high) = (found.bracket_low.unwrap(), found.bracket_high.unwrap());
    assert!(high / low - 1.0 <= DEFAULT_PRECISION + 1e-9, "{low} {high}");
    assert_eq!(found.repeats.len(), DEFAULT_REPEATS as usize);
    assert_eq!(found.repeats[0], capacity);
    // Every step is on the curve, ramp first, then the bisection, then the confirmations.
    assert_eq!(found.curve.len(), found.steps as usize);
    let stages: Vec<Stage> = found.curve.iter().map(|p| p.stage).collect();
    let first_bisect = stages.iter().position(|s| *s == Stage::Bisect).unwrap();
    let first_confirm = stages.iter().position(|s| *s == Stage::Confirm).unwrap();
    assert!(stages[..first_bisect].iter().all(|s| *s == Stage::Ramp));
    assert!(stages[first_confirm..].iter().all(|s| *s == Stage::Confirm));
    assert!(first_bisect < first_confirm);
    // The ramp doubled from the start until the SLO failed.
    assert_eq!(found.curve[0].offered_per_s, 1_000.0);
    assert_eq!(found.curve[1].offered_per_s, 2_000.0);
}

#[test]
fn two_searches_of_one_server_agree_and_start_from_above_or_below() {
    let mut a = Queue::new(8_000.0, 0.01, 1);
    let mut b = Queue::new(8_000.0, 0.01, 2);
    let from_below = search(&mut a, &["p99<20ms"], 500.0).capacity_per_s.unwrap();
    let from_above = search(&mut b, &["p99<20ms"], 50_000.0)
        .capacity_per_s
        .unwrap();
    assert!(
        (from_below / from_above - 1.0).abs() < 0.05,
        "{from_below} vs {from_above}"
    );
}

#[test]
fn a_generator_that_cannot_offer_the_rate_ends_the_search_without_a_capacity() {
    let mut queue = Queue::new(10_000.0, 0.0, 3);
    queue.generator_limit = Some(5_000.0);
    let found = search(&mut queue, &["p99<10ms"], 1_000.0);
    assert_eq!(found.capacity_per_s, None);
    let reason = found.reason.unwrap();
    assert!(reason.starts_with("generator-bound at 8,000/s"), "{reason}");
    assert!(!found.confirmed);
}

#[test]
fn a_step_completing_less_than_offered_with_every_slo_held_is_the_generators() {
    let slo = vec![parse_slo("p99<10ms").unwrap()];
    let mut search = Search::new(slo, SearchSettings::from_start(1_000.0));
    let mut queue = Queue::new(10_000.0, 0.0, 3);
    let mut measured = queue.step(1_000.0);
    measured.achieved_per_s = 900.0;
    search.record(&measured);
    assert!(search.is_done());
    let reason = search.outcome().reason.clone().unwrap();
    assert!(
        reason.contains("900/s completed of the 1000/s offered"),
        "{reason}"
    );
}

#[test]
fn a_short_step_one_request_short_of_its_schedule_is_rounding_not_the_generator() {
    // 0.4 s at 84/s schedules 33.6 requests; 33 completed is 98.2%, under the share, yet no
    // generator fell behind: the window's edges cut a request.
    let slo = vec![parse_slo("p90<100ms").unwrap()];
    let mut search = Search::new(slo, SearchSettings::from_start(84.0));
    let mut measured = Queue::new(200.0, 0.0, 3).step(84.0);
    measured.figures.requests = 33;
    measured.achieved_per_s = 33.0 / 0.4;
    search.record(&measured);
    assert_eq!(search.outcome().reason, None, "{:?}", search.outcome());
    assert_eq!(search.next_step(), Some((168.0, Stage::Ramp)));
}

#[test]
fn a_server_that_misses_the_slo_at_any_rate_has_no_capacity() {
    // Its p99 at no load is 4.6 ms: a 1 ms SLO never holds.
    let mut queue = Queue::new(1_000.0, 0.0, 4);
    let found = search(&mut queue, &["p99<1ms"], 100.0);
    assert_eq!(found.capacity_per_s, None);
    assert!(
        found.reason.as_deref().unwrap().contains("fails even at"),
        "{:?}",
        found.reason
    );
    assert!(found.curve.iter().all(|p| !p.held));
}

#[test]
fn an_error_slo_caps_the_capacity_where_errors_begin() {
    let mut queue = Queue::new(10_000.0, 0.0, 5);
    queue.errors_above = Some((4_000.0, 1.0));
    let found = search(&mut queue, &["p99<100ms", "errors<0.1%"], 1_000.0);
    let capacity = found.capacity_per_s.unwrap();
    assert!(
        capacity <= 4_000.0 && capacity > 4_000.0 * 0.97,
        "{capacity}"
    );
    let failed = found.curve.iter().find(|p| !p.held).unwrap();
    assert!(
        failed.why.as_deref().unwrap().contains("errors"),
        "{failed:?}"
    );
}

#[test]
fn a_confirmation_window_that_fails_steps_down_and_confirms_again() {
    let slo = vec![parse_slo("p99<10ms").unwrap()];
    let settings = SearchSettings {
        repeats: 1,
        ..SearchSettings::from_start(1_000.0)
    };
    let mut search = Search::new(slo, settings);
    let mut queue = Queue::new(10_000.0, 0.0, 6);
    let mut first_confirm = None;
    let mut slowed = false;
    while let Some((rate, stage)) = search.next_step() {
        let mut measured = queue.step(rate);
        if stage == Stage::Confirm && !slowed {
            // The machine is slow in the first confirmation window.
            first_confirm = Some(rate);
            measured.figures.latency.p99_ms = 50.0;
            slowed = true;
        }
        search.record(&measured);
    }
    let found = search.into_outcome();
    let stepped = first_confirm.unwrap() * (1.0 - DEFAULT_PRECISION);
    assert_eq!(found.capacity_per_s, Some(stepped));
    assert!(found.confirmed);
    let confirms = found
        .curve
        .iter()
        .filter(|p| p.stage == Stage::Confirm)
        .count();
    assert_eq!(confirms, 1 + DEFAULT_CONFIRM_WINDOWS as usize);
}

#[test]
fn later_confirmations_start_above_the_capacity_and_sample_it() {
    let mut queue = Queue::new(10_000.0, 0.02, 9);
    let found = search(&mut queue, &["p99<10ms"], 1_000.0);
    let capacity = found.capacity_per_s.unwrap();
    let later: Vec<&CurvePoint> = found
        .curve
        .iter()
        .filter(|p| p.stage == Stage::Confirm && p.offered_per_s > capacity)
        .collect();
    assert!(!later.is_empty(), "{:?}", found.curve);
    assert!(found.repeats[1..]
        .iter()
        .all(|r| (r / capacity - 1.0).abs() < 0.2));
}

#[test]
fn settings_no_search_can_run_with_are_refused() {
    let mut s = SearchSettings::from_start(100.0);
    assert!(s.check().is_ok());
    s.precision = 0.0;
    assert!(s.check().is_err());
    let s = SearchSettings::from_start(-1.0);
    assert!(s.check().is_err());
}

#[test]
fn a_capacity_confirmed_far_below_the_bracket_says_the_latency_has_stalls() {
    // A machine that stalls in most windows whatever the rate, after a bisection that was lucky.
    let slo = vec![parse_slo("p99<10ms").unwrap()];
    let settings = SearchSettings {
        repeats: 1,
        ..SearchSettings::from_start(1_000.0)
    };
    let mut search = Search::new(slo, settings);
    let mut queue = Queue::new(10_000.0, 0.0, 8);
    let mut confirms = 0;
    while let Some((rate, stage)) = search.next_step() {
        let mut measured = queue.step(rate);
        if stage == Stage::Confirm {
            confirms += 1;
            if confirms <= 5 {
                measured.figures.latency.p99_ms = 30.0;
            }
        }
        search.record(&measured);
    }
    let found = search.into_outcome();
    let capacity = found.capacity_per_s.unwrap();
    assert!(capacity < STALLS_SHARE * found.bracket_low.unwrap());
    let note = found.reason.unwrap();
    assert!(
        note.contains("5 of ") && note.contains("windows between the two failed"),
        "{note}"
    );
    assert!(
        note.contains("stalls that do not depend on the rate"),
        "{note}"
    );
}
