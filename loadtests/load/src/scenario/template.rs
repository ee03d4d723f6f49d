//! Templates: literal text with `{{function args}}` holes (`seq`, `random_int`, `random_string`,
//! `one_of`, `pick`, `take`), filled from a thread's randomness, pools and the run's sequence;
//! `filler` and `json_strings` make fixed bodies, expanded once when the scenario is compiled.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{PoolSpec, Pools};

/// A template: literal text with `{{function args}}` holes.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub(super) parts: Vec<Part>,
}

/// One piece of a template: text, or a hole and what fills it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Part {
    Text(String),
    Seq,
    RandomInt(i64, i64),
    RandomString(usize),
    OneOf(Vec<String>),
    PickPool(usize),
    TakePool(usize),
}

/// Everything templates draw on while rendering: randomness, pools and the run's sequence.
#[derive(Debug)]
pub struct RenderContext<'a> {
    /// This thread's random numbers.
    pub rng: &'a mut fastrand::Rng,
    /// This thread's pools.
    pub pools: &'a mut Pools,
    /// The run-wide counter behind `{{seq}}` (starts at 1).
    pub seq: &'a AtomicU64,
    /// How the counter's values become `{{seq}}` numbers (one after the other, unless the run is
    /// one shard of several).
    pub spacing: SeqSpacing,
}

/// How `{{seq}}` numbers are spaced: the counter's `k`-th value (from 0) renders as
/// `base + k * count + index + 1`, so shard `index` of `count` never renders a number another
/// shard does, and none at or below `base` (the numbers the fixtures used). The default (`0`,
/// `0`, `1`) renders 1, 2, 3, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqSpacing {
    /// Numbers already used (by the fixtures): every rendered number is above it.
    pub base: u64,
    /// This shard's index, `0..count`.
    pub index: u64,
    /// How many shards share the numbers (1: a whole run).
    pub count: u64,
}

impl Default for SeqSpacing {
    fn default() -> Self {
        SeqSpacing {
            base: 0,
            index: 0,
            count: 1,
        }
    }
}

impl SeqSpacing {
    /// The number the counter's `k`-th value (from 0) renders as.
    pub fn number(&self, k: u64) -> u64 {
        self.base + k * self.count.max(1) + self.index + 1
    }
}

impl Template {
    /// A template with no holes.
    pub fn literal(text: &str) -> Template {
        Template {
            parts: vec![Part::Text(text.to_string())],
        }
    }

    /// The template with every hole shown as `{name}`: `/tables/{free_tables}/seat`.
    pub fn display(&self) -> String {
        self.display_with(&[])
    }

    pub(super) fn display_with(&self, pools: &[PoolSpec]) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::PickPool(i) | Part::TakePool(i) => match pools.get(*i) {
                    Some(spec) => out.push_str(&format!("{{{}}}", spec.name)),
                    None => out.push_str("{id}"),
                },
                Part::Seq => out.push_str("{seq}"),
                Part::RandomInt(..) => out.push_str("{n}"),
                Part::RandomString(_) | Part::OneOf(_) => out.push_str("{s}"),
            }
        }
        out
    }

    /// Fills the holes. The caller has checked the pools hold enough values (see
    /// [`RequestSpec::formable`]); a missing value renders as an empty string.
    pub fn render(&self, ctx: &mut RenderContext<'_>, out: &mut String) {
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Seq => out.push_str(
                    &ctx.spacing
                        .number(ctx.seq.fetch_add(1, Ordering::Relaxed))
                        .to_string(),
                ),
                Part::RandomInt(lo, hi) => out.push_str(&ctx.rng.i64(*lo..=*hi).to_string()),
                Part::RandomString(n) => {
                    for _ in 0..*n {
                        out.push(ctx.rng.alphanumeric());
                    }
                }
                Part::OneOf(list) => out.push_str(&list[ctx.rng.usize(0..list.len())]),
                Part::PickPool(i) => {
                    if let Some(v) = ctx.pools.pick(*i, ctx.rng) {
                        out.push_str(v);
                    }
                }
                Part::TakePool(i) => {
                    if let Some(v) = ctx.pools.take(*i, ctx.rng) {
                        out.push_str(&v);
                    }
                }
            }
        }
    }
}
