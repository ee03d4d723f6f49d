//! One run spread over several generator processes (machines, pods): each runs a shard, `I/N`, of
//! the run's users (closed loop) or of its paced connections and their schedule (open loop), and
//! of its `--requests` budget; `brigade merge` adds their results up into one
//! ([`brigade_records::result::merge_shards`]).
//!
//! What keeps shards apart: shard `I` runs the users numbered `I`'s block of the whole run's
//! users (so with one `--seed` they send what those users would send in an unsharded run), its
//! `{{seq}}` numbers are interleaved with the other shards' ([`SeqSpacing`]), and the values a
//! scenario `take`s from its fixtures are dealt out between shards, one shard each, the way they
//! are dealt between a generator's threads. Fixtures are made once, by a separate step
//! (`brigade load --setup-only --fixtures FILE`), and every shard reads them from that file.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use brigade_records::shard::Shard;

use crate::scenario::{Pools, Scenario, SeqSpacing};

/// How `shard`'s `{{seq}}` numbers are spaced, above `base` (the numbers the fixtures used).
pub fn spacing(shard: Shard, base: u64) -> SeqSpacing {
    SeqSpacing {
        base,
        index: u64::from(shard.index),
        count: u64::from(shard.count.max(1)),
    }
}

/// A scenario's fixtures, made once by its `[[setup]]` steps and written to a file that every
/// shard reads: the values each pool captured and the `{{seq}}` numbers the setup used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fixtures {
    /// The scenario they were made for (its name).
    pub scenario: String,
    /// `{{seq}}` numbers the setup used: shards number above it.
    pub seq_used: u64,
    /// Pool name → the values it captured, oldest first.
    pub pools: BTreeMap<String, Vec<String>>,
}

impl Fixtures {
    /// The fixtures in `pools`, filled by `scenario`'s setup, which used `seq_used` numbers.
    pub fn from_pools(scenario: &Scenario, pools: &Pools, seq_used: u64) -> Fixtures {
        let pools = scenario
            .pools()
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                (
                    spec.name.clone(),
                    pools.values(i).map(str::to_string).collect(),
                )
            })
            .collect();
        Fixtures {
            scenario: scenario.name().to_string(),
            seq_used,
            pools,
        }
    }

    /// This shard's pools: of a pool some request `take`s from, every `count`-th value (from the
    /// shard's index), so no two shards act on one fixture; any other pool whole.
    pub fn pools_for(&self, scenario: &Scenario, shard: Shard) -> Result<Pools> {
        if self.scenario != scenario.name() {
            bail!(
                "the fixtures were made for scenario {:?}, not {:?}",
                self.scenario,
                scenario.name()
            );
        }
        let mut pools = scenario.empty_pools();
        for (i, spec) in scenario.pools().iter().enumerate() {
            let values = self.pools.get(&spec.name).map(Vec::as_slice).unwrap_or(&[]);
            for (k, v) in values.iter().enumerate() {
                if !spec.taken || shard.owns(k as u64) {
                    pools.push(i, v.clone());
                }
            }
        }
        Ok(pools)
    }

    /// Writes the fixtures as JSON to `path` (through a temporary file, so a reader never sees
    /// half of it).
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)? + "\n";
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).with_context(|| format!("Failed to write {}", tmp.display()))?;
        std::fs::rename(&tmp, path)
            .with_context(|| format!("Failed to move {} to {}", tmp.display(), path.display()))
    }

    /// Reads fixtures written by [`Fixtures::save`].
    pub fn load(path: &Path) -> Result<Fixtures> {
        let text = brigade_records::files::read_text(
            path,
            brigade_records::files::MAX_INPUT_BYTES,
            "fixtures",
        )?;
        serde_json::from_str(&text).with_context(|| format!("fixtures {}", path.display()))
    }
}

/// What a run does differently when it is one shard of several, or starts at an agreed time.
#[derive(Debug, Clone, Default)]
pub struct ShardPlan {
    /// Its share of the run.
    pub shard: Shard,
    /// Start (the warm-up) at this wall-clock time, so shards on other machines start together.
    pub start_at: Option<SystemTime>,
    /// How late past `start_at` the run may still start (at once, its warm-up that much shorter).
    /// Zero, the default: a late start is an error, as shards on other machines need; window sets
    /// in one process, whose windows are timed from the agreed start plus the warm-up, allow part
    /// of the warm-up.
    pub late_ok: std::time::Duration,
    /// Fixtures made beforehand: the setup steps are not sent again.
    pub fixtures: Option<Fixtures>,
    /// Which attempt at this shard the run is (`--attempt`; 0 and 1 both mean the first): a
    /// retried shard starts at a time of its own, and its result says so.
    pub attempt: u32,
    /// Set from outside (a SIGTERM, `brigade load`'s handler) to end the run early: sending stops,
    /// the requests in flight are answered or time out, and the result, measured until then, says
    /// it was interrupted.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// Parses `--start-at`: an RFC 3339 time (`2026-11-30T18:00:00Z`) or seconds since the UNIX epoch.
pub fn parse_start_at(text: &str) -> Result<SystemTime, String> {
    let t = text.trim();
    let at = if let Some(secs) = t.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0) {
        Duration::try_from_secs_f64(secs)
            .ok()
            .and_then(|d| SystemTime::UNIX_EPOCH.checked_add(d))
    } else {
        let at = time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
            .map_err(|e| {
                format!("{text:?} is not a time (RFC 3339, e.g. 2026-11-30T18:00:00Z, or UNIX seconds): {e}")
            })?;
        let nanos = at.unix_timestamp_nanos();
        if nanos < 0 {
            return Err(format!("{text:?} is before 1970"));
        }
        u64::try_from(nanos)
            .ok()
            .and_then(|n| SystemTime::UNIX_EPOCH.checked_add(Duration::from_nanos(n)))
    };
    let at = at.ok_or_else(|| format!("{text:?} is past any time this machine can keep"))?;
    // Shards start together within seconds; a day ahead is a slip (milliseconds for seconds?).
    let latest = SystemTime::now() + MAX_START_AHEAD;
    if at > latest {
        return Err(format!(
            "{text:?} is more than {} hours from now: --start-at takes UNIX seconds or RFC 3339",
            MAX_START_AHEAD.as_secs() / 3600
        ));
    }
    Ok(at)
}

/// How far ahead `--start-at` may be.
pub const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// Seconds since the UNIX epoch of `at`.
pub fn unix_s(at: SystemTime) -> f64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_numbers_of_different_shards_never_meet() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..3 {
            let spacing = spacing(Shard { index: i, count: 3 }, 40);
            for k in 0..100 {
                let n = spacing.number(k);
                assert!(n > 40, "above the fixtures' numbers: {n}");
                assert!(seen.insert(n), "{n} rendered twice");
            }
        }
        assert_eq!(seen.len(), 300);
        // A whole run numbers 1, 2, 3 as it always did.
        assert_eq!(spacing(Shard::default(), 0).number(0), 1);
        assert_eq!(spacing(Shard::default(), 0).number(2), 3);
    }

    #[test]
    fn fixtures_a_scenario_takes_are_dealt_out_between_shards_and_the_rest_copied() {
        let scenario = Scenario::parse(
            r#"
name = "deal"
[[setup]]
method = "POST"
path = "/a"
capture = { free = "/id", shared = "/id" }
[[request]]
path = "/a/{{take free}}"
[[request]]
path = "/b/{{pick shared}}"
"#,
            "deal",
        )
        .unwrap();
        let mut pools = scenario.empty_pools();
        let at = |name: &str| {
            scenario
                .pools()
                .iter()
                .position(|p| p.name == name)
                .unwrap()
        };
        let (free, shared) = (at("free"), at("shared"));
        for i in 0..7 {
            pools.push(free, format!("f{i}"));
        }
        pools.push(shared, "s".into());
        let fixtures = Fixtures::from_pools(&scenario, &pools, 9);
        let mut dealt = Vec::new();
        for index in 0..3 {
            let mine = fixtures
                .pools_for(&scenario, Shard { index, count: 3 })
                .unwrap();
            assert_eq!(mine.values(shared).collect::<Vec<_>>(), ["s"]);
            dealt.extend(mine.values(free).map(str::to_string));
        }
        dealt.sort();
        assert_eq!(
            dealt,
            ["f0", "f1", "f2", "f3", "f4", "f5", "f6"],
            "each once"
        );
        let other = Scenario::parse("name = \"other\"\n[[request]]\npath = \"/\"", "o").unwrap();
        assert!(fixtures.pools_for(&other, Shard::default()).is_err());
    }

    #[test]
    fn start_times_parse_as_rfc3339_or_unix_seconds() {
        let a = parse_start_at("2026-11-30T18:00:00Z").unwrap();
        let b = parse_start_at("1796061600").unwrap();
        assert_eq!(a, b);
        assert!(parse_start_at("soon").is_err());
    }

    #[test]
    fn start_times_past_any_clock_or_days_ahead_are_refused_not_a_panic() {
        for text in ["10000000000000000000", "1e300", "9999-12-31T23:59:59Z"] {
            let err = parse_start_at(text).unwrap_err();
            assert!(
                err.contains("hours from now") || err.contains("past any time"),
                "{text}: {err}"
            );
        }
        // Milliseconds given for seconds: refused.
        let millis = (unix_s(SystemTime::now()) * 1000.0) as u64;
        assert!(parse_start_at(&millis.to_string()).is_err());
        assert!(parse_start_at(&format!("{}", unix_s(SystemTime::now()) + 60.0)).is_ok());
    }
}
