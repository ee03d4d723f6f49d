//! A calibration knob, off by default: `serve --handicap-us N` makes every request of the route
//! table burn about N µs of CPU before its handler runs, on every runtime alike.
//!
//! It exists to test Brigade's verdicts, not to serve anyone: a comparison of a runtime with
//! itself (`--runtimes hyper,hyper`) where one copy carries a known extra cost must find that cost,
//! and find nothing without it (`compare --handicap 'hyper#2=5'`, `scripts/calibrate-verdicts.sh`).
//!
//! The cost is fixed *work*, not a time to wait out: a loop of a known number of iterations, sized
//! once when the knob is set by timing the same loop on this CPU (the fastest of a few trials, so a
//! preempted trial does not inflate it). A request that is preempted halfway still does the same
//! work, so the planted cost per request is the same in a busy second as in a quiet one, and the
//! instruction count per request (callgrind) grows by a constant.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Iterations of the work loop every request runs; 0: the knob is off.
static ITERATIONS: AtomicU64 = AtomicU64::new(0);

/// Iterations timed per calibration trial.
const TRIAL: u64 = 200_000;

/// The work loop: `n` rounds of a multiply-xorshift that the optimiser cannot remove.
fn work(n: u64) -> u64 {
    let mut x = std::hint::black_box(0x9E37_79B9_7F4A_7C15_u64);
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    }
    std::hint::black_box(x)
}

/// Iterations of the work loop that take one microsecond on this CPU (the fastest of five trials).
pub fn iterations_per_us() -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let began = Instant::now();
        work(TRIAL);
        best = best.min(began.elapsed().as_secs_f64());
    }
    TRIAL as f64 / (best.max(1e-9) * 1e6)
}

/// Turns the knob: every request from now on burns about `us` µs of CPU (0 turns it off;
/// fractions are allowed, a calibration plants costs of a fraction of a µs). Returns the
/// iterations per request it chose.
pub fn set_us(us: f64) -> u64 {
    let iterations = if us.is_finite() && us > 0.0 {
        (iterations_per_us() * us).round() as u64
    } else {
        0
    };
    ITERATIONS.store(iterations, Ordering::Relaxed);
    iterations
}

/// Whether the knob is on.
pub fn is_on() -> bool {
    ITERATIONS.load(Ordering::Relaxed) > 0
}

/// Burns the planted cost, if any: called once per request, before its handler.
#[inline]
pub fn burn() {
    let n = ITERATIONS.load(Ordering::Relaxed);
    if n > 0 {
        work(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_knob_sizes_its_loop_from_the_cpu_and_turns_off_at_zero() {
        let five = set_us(5.0);
        assert!(five > 0 && is_on());
        // Twice the cost is about twice the work (calibrations differ only by timing noise).
        let ten = set_us(10.0);
        assert!(ten > five, "{ten} vs {five}");
        burn();
        assert_eq!(set_us(0.0), 0);
        assert!(!is_on());
    }
}
