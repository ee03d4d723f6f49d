//! The progress line a run prints while it runs on a terminal: requests, errors and the rate so
//! far, redrawn in place.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::worker::{Progress, Shared};
use super::LoadConfig;

/// The live progress bar.
pub(super) struct ProgressView<'a> {
    pub(super) bar: Option<indicatif::ProgressBar>,
    pub(super) shared: &'a Shared,
    pub(super) progress: &'a [Arc<Progress>],
    pub(super) last: std::cell::Cell<(Instant, u64)>,
}

impl<'a> ProgressView<'a> {
    pub(super) fn new(
        config: &LoadConfig,
        shared: &'a Shared,
        progress: &'a [Arc<Progress>],
    ) -> ProgressView<'a> {
        let bar = (config.progress && std::io::stderr().is_terminal()).then(|| {
            let (len, template) = match (config.duration, config.requests) {
                (Some(d), _) => (
                    (config.warmup + d).as_millis() as u64,
                    "{spinner} {prefix:>9} [{elapsed_precise}] {wide_bar} {msg}",
                ),
                (None, Some(n)) => (
                    n,
                    "{spinner} {prefix:>9} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
                ),
                (None, None) => (0, "{spinner} {msg}"),
            };
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(len),
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar
        });
        ProgressView {
            bar,
            shared,
            progress,
            last: std::cell::Cell::new((Instant::now(), 0)),
        }
    }

    pub(super) fn tick(&self, now: Instant) {
        let Some(bar) = &self.bar else { return };
        let done: u64 = self
            .progress
            .iter()
            .map(|p| p.done.load(Ordering::Relaxed))
            .sum();
        let errors: u64 = self
            .progress
            .iter()
            .map(|p| p.errors.load(Ordering::Relaxed))
            .sum();
        let (at, before) = self.last.get();
        let dt = (now - at).as_secs_f64();
        if dt < 0.25 {
            return;
        }
        self.last.set((now, done));
        let rate = (done - before) as f64 / dt;
        let warming = now < self.shared.measure_start();
        bar.set_prefix(if warming { "warm-up" } else { "measuring" });
        match self.shared.requests {
            Some(_) if self.shared.duration.is_none() => {
                bar.set_position(
                    self.shared
                        .claimed
                        .load(Ordering::Relaxed)
                        .min(bar.length().unwrap_or(0)),
                );
            }
            _ => bar.set_position(
                now.saturating_duration_since(self.shared.start.get().copied().unwrap_or(now))
                    .as_millis() as u64,
            ),
        }
        bar.set_message(format!("{rate:>9.0} hits/s  {errors} errors"));
    }

    pub(super) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
