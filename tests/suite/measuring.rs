//! One lock for the tests that measure: a planted cost, a side-by-side ratio, an SLO search or an
//! offered rate burns CPU or depends on getting it, and a second such test beside it would be
//! measuring the first. When each file was its own binary, cargo ran the binaries one after the
//! other and only a file's own tests met; in one binary every measuring test meets every other.

use std::sync::{Mutex, MutexGuard};

static MEASURING: Mutex<()> = Mutex::new(());

/// Waits until no other measuring test runs; this one measures alone while the guard lives. A
/// test that panicked while holding it poisons nothing: the lock guards no data.
pub(crate) fn alone() -> MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}
