//! A level's rate: set from the isolated runs ([`level_rates`]), corrected from what the servers
//! measure side by side ([`corrected_level`]), measured again when the first round lands off its
//! share ([`off_its_share`], a secant after two attempts), and re-aimed once on round 2's fresh
//! servers ([`reaim`]). Every function here is arithmetic on rates and busy shares; the
//! measurements are [`super`]'s.

use brigade_records::side::{Level, SideCell};

/// The rates of the load levels for a cell from what its isolated runs measured: each runtime's
/// CPU µs per request and successful hits/s. A level `f` offers every runtime
/// `f × min(server CPUs × 10⁶ / Σ cost, min hits/s)`: the first term puts the servers' CPUs in
/// total at the share `f`, the second keeps a runtime whose closed-loop rate is bounded by waiting
/// (durable writes) below what it could deliver alone.
pub(crate) fn level_rates(
    levels: &[f64],
    server_cpus: usize,
    isolated: &[(f64, f64)],
) -> Vec<Level> {
    let costs: f64 = isolated.iter().map(|(cost, _)| cost).sum();
    let slowest = isolated
        .iter()
        .map(|(_, hits)| *hits)
        .fold(f64::INFINITY, f64::min);
    if !(costs > 0.0 && slowest.is_finite() && slowest > 0.0) {
        return Vec::new();
    }
    let by_cpu = server_cpus.max(1) as f64 * 1e6 / costs;
    let full = by_cpu.min(slowest);
    let bound = if by_cpu <= slowest {
        format!(
            "the server CPUs' share: {} CPU(s) ÷ the runtimes' isolated CPU per request summed \
             ({costs:.1} µs)",
            server_cpus.max(1)
        )
    } else {
        format!("the slowest runtime's isolated closed-loop rate ({slowest:.0}/s)")
    };
    levels
        .iter()
        .map(|&f| Level {
            label: format!("{:.0}%", f * 100.0),
            rate_per_s: (f * full).round().max(1.0),
            from: format!("{:.0}% of {bound}", f * 100.0),
            share: Some(f),
            cap_per_s: (f * slowest).round().max(1.0),
        })
        .collect()
}

/// The rate that puts the servers' CPUs at `share`, from a rate and the share it measured: CPU per
/// request grows as the rate falls (fewer requests share each wake-up), so a rate scaled down
/// lands at or above its share, and one scaled up at or below it; never above the level's cap.
pub(crate) fn corrected_rate(level: &Level, measured_rate: f64, measured_share: f64) -> f64 {
    match level.share {
        Some(share) if measured_share > 0.0 && measured_rate > 0.0 => (measured_rate * share
            / measured_share)
            .min(level.cap_per_s)
            .round()
            .max(1.0),
        _ => level.rate_per_s,
    }
}

/// A busy share at or above which an attempt saturated the server CPUs: its share is the CPUs'
/// capacity, not the rate's, so no secant goes through it.
const SATURATED_SHARE: f64 = 0.9;

/// How far (points of busy share) a level may land from the share its name asks for.
pub(crate) const LEVEL_TOLERANCE_PCT: f64 = 10.0;

/// `level` set again from what `cell` measured at it, when its busy share missed the level's
/// share by more than [`LEVEL_TOLERANCE_PCT`] (a cell short of its rate counts as saturated): with
/// one attempt by scaling its rate, with two or more by the secant through the last two
/// (`tried`: every attempt's rate and busy share, in order), since the busy share does not grow in
/// proportion to the rate (CPU per request falls as the rate rises). None when it landed, when the
/// level is a given rate, or when the correction changes nothing.
pub(super) fn off_its_share(level: &Level, cell: &SideCell, tried: &[(f64, f64)]) -> Option<Level> {
    let share = level.share?;
    let busy = busy_share(cell);
    let usable = cell.windows > 0 && busy > 0.0;
    if !usable || (busy - share).abs() * 100.0 <= LEVEL_TOLERANCE_PCT {
        return None;
    }
    let mut again = corrected_level(level, Some((level.rate_per_s, busy)));
    if let [.., (r1, s1), (r2, s2)] = tried {
        // Only two points on the curve (a saturated attempt is not: its share stops at the CPUs'
        // capacity), a rising share and a step it can resolve; else the scaling above stands.
        let on_curve = |s: f64| s < SATURATED_SHARE;
        if on_curve(*s1) && on_curve(*s2) && (s2 - s1).abs() > 0.01 && (s2 - s1) / (r2 - r1) > 0.0 {
            let secant = r2 + (share - s2) * (r2 - r1) / (s2 - s1);
            again.rate_per_s = secant
                .clamp(r2 / 2.0, level.cap_per_s.min(r2 * 2.0))
                .round()
                .max(1.0);
        }
    }
    (again.rate_per_s != level.rate_per_s).then_some(again)
}

/// What to say of a level that is still off its share after `attempts` attempts, if it is.
pub(super) fn missed_share(level: &Level, cell: &SideCell, attempts: usize) -> Option<String> {
    let share = level.share?;
    let busy = busy_share(cell);
    (cell.windows > 0 && (busy - share).abs() * 100.0 > LEVEL_TOLERANCE_PCT).then(|| {
        format!(
            "still {:.0}% busy after {attempts} attempt(s): this level measured {:.0}%, not {}",
            busy * 100.0,
            busy * 100.0,
            level.label
        )
    })
}

/// How far (points of busy share) round 2's fresh servers may land from a level's share before the
/// rounds after it are re-aimed ([`reaim`]).
const REAIM_PCT: f64 = LEVEL_TOLERANCE_PCT / 2.0;

/// The levels' rates set again from what round 2 measured, where it landed more than
/// [`REAIM_PCT`] from the level's share: round 1's servers had run the probes and the first
/// attempts (their stores hold more, each request costs more), so a rate that put them at 80%
/// kept round 2's fresh servers near 66–70% (measured here), and every later round with them.
/// Rounds 3 on run at the corrected rate; rounds 1–2 stay, each round a block of its own rate (the
/// analysis compares runtimes within a round). `busy`: each level's busy share in round 2, when
/// usable.
pub(super) fn reaim(levels: &mut [Level], cells: &mut [SideCell], busy: &[(usize, Option<f64>)]) {
    for &(i, measured) in busy {
        let (Some(measured), Some(cell)) = (measured, cells.get_mut(i)) else {
            continue;
        };
        let Some(level) = levels.get_mut(i) else {
            continue;
        };
        let Some(share) = level.share else {
            continue;
        };
        if (measured - share).abs() * 100.0 <= REAIM_PCT || cell.not_judged.is_some() {
            continue;
        }
        let rate = corrected_rate(level, level.rate_per_s, measured);
        if rate == level.rate_per_s {
            continue;
        }
        println!(
            "  {} kept round 2's fresh servers {:.0}% busy at {:.0}/s: rounds 3 on at {rate:.0}/s",
            level.label,
            measured * 100.0,
            level.rate_per_s
        );
        level.from = format!(
            "{}; re-aimed on round 2's fresh servers ({:.0}% busy at {:.0}/s): rounds 3 on at \
             {rate:.0}/s",
            level.from,
            measured * 100.0,
            level.rate_per_s
        );
        level.rate_per_s = rate;
        cell.rate_per_s = rate;
        cell.rate_from.clone_from(&level.from);
    }
}

/// `level` with its rate corrected from a rate `measured` side by side and the share of the
/// server CPUs it kept busy (unchanged without one).
pub(super) fn corrected_level(level: &Level, measured: Option<(f64, f64)>) -> Level {
    let mut level = level.clone();
    if let Some((rate, share)) = measured {
        let corrected = corrected_rate(&level, rate, share);
        if corrected != level.rate_per_s {
            level.from = format!(
                "{} of the server CPUs: {rate:.0}/s each kept them {:.0}% busy side by side, \
                 scaled",
                level.label,
                share * 100.0
            );
            level.rate_per_s = corrected;
        }
    }
    level
}

/// How busy a level kept the server CPUs, as a share of their capacity (what the report prints).
pub(super) fn busy_share(cell: &SideCell) -> f64 {
    cell.server_cpus_busy_pct / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_rates_put_the_servers_cpus_at_the_share_asked_or_stay_under_the_slowest() {
        // Two runtimes at 50 and 50 µs per request on one CPU: 10,000/s fill it together.
        let levels = level_rates(&[0.4, 0.8], 1, &[(50.0, 20_000.0), (50.0, 19_000.0)]);
        assert_eq!(levels.len(), 2);
        assert_eq!(levels[0].rate_per_s, 4_000.0);
        assert_eq!(levels[1].rate_per_s, 8_000.0);
        assert_eq!(levels[1].label, "80%");
        // Waiting-bound: a runtime that managed 1,000/s alone is never offered more than that.
        let bound = level_rates(&[0.8], 1, &[(50.0, 1_000.0), (50.0, 20_000.0)]);
        assert_eq!(bound[0].rate_per_s, 800.0);
        assert_eq!(bound[0].cap_per_s, 800.0);
        assert!(bound[0].from.contains("slowest"), "{}", bound[0].from);
        assert!(level_rates(&[0.5], 1, &[]).is_empty());
    }

    #[test]
    fn a_level_is_corrected_by_the_share_its_servers_measured_but_never_past_its_cap() {
        let levels = level_rates(&[0.4, 0.8], 1, &[(50.0, 20_000.0), (50.0, 19_000.0)]);
        // 4,000/s each measured 80% busy side by side: 40% wants about 2,000/s.
        assert_eq!(corrected_rate(&levels[0], 4_000.0, 0.8), 2_000.0);
        // A measured share far below the aim may not push past the slowest runtime's rate.
        assert_eq!(
            corrected_rate(&levels[1], 4_000.0, 0.1),
            levels[1].cap_per_s
        );
        let given = Level {
            label: "given".into(),
            rate_per_s: 500.0,
            from: String::new(),
            share: None,
            cap_per_s: 500.0,
        };
        assert_eq!(corrected_rate(&given, 4_000.0, 0.8), 500.0);
    }

    #[test]
    fn a_level_that_missed_its_share_by_more_than_ten_points_is_set_again() {
        let levels = level_rates(&[0.4], 1, &[(50.0, 20_000.0), (50.0, 19_000.0)]);
        let measured = |busy: f64| SideCell {
            windows: 6,
            server_cpus_busy_pct: busy,
            ..SideCell::default()
        };
        // 72% busy at 4,000/s for a 40% level: about 2,222/s would land it.
        let again = off_its_share(&levels[0], &measured(72.0), &[(4_000.0, 0.72)]).expect("again");
        assert_eq!(again.rate_per_s, 2_222.0);
        // The second correction follows the secant through both attempts: 2,222/s gave 52%, so
        // 40% lies at 2,222 − 12 × (1,778 / 20) ≈ 1,155/s, below the 1,709/s plain scaling gives.
        let tried = [(4_000.0, 0.72), (2_222.0, 0.52)];
        let second = off_its_share(&again, &measured(52.0), &tried).expect("again");
        assert_eq!(second.rate_per_s, 1_155.0);
        // Within ten points it stays; a given rate is never moved.
        assert!(off_its_share(&levels[0], &measured(48.0), &[(4_000.0, 0.48)]).is_none());
        let given = Level {
            share: None,
            ..levels[0].clone()
        };
        assert!(off_its_share(&given, &measured(72.0), &[]).is_none());
        // A level still off after its attempts says what it measured.
        let words = missed_share(&levels[0], &measured(55.0), 3).unwrap();
        assert!(
            words.contains("this level measured 55%, not 40%"),
            "{words}"
        );
        assert!(missed_share(&levels[0], &measured(45.0), 3).is_none());
        // A saturated attempt is no point of the curve: 597/s at 100%, then 239/s at 73%, is
        // scaled from the last (131/s), not sent past it by the secant.
        let tried = [(597.0, 1.0), (239.0, 0.73)];
        let at = Level {
            rate_per_s: 239.0,
            ..levels[0].clone()
        };
        let third = off_its_share(&at, &measured(73.0), &tried).expect("again");
        assert_eq!(third.rate_per_s, 131.0);
    }

    #[test]
    fn a_level_whose_fresh_servers_land_off_its_share_in_round_two_is_re_aimed() {
        let mut levels = level_rates(&[0.4, 0.8], 1, &[(50.0, 20_000.0), (50.0, 19_000.0)]);
        levels[1].rate_per_s = 4_000.0;
        let mut cells = vec![SideCell::default(), SideCell::default()];
        // Round 2: the 40% level at 43% stays; the 80% level at 64% is set to 5,000/s.
        reaim(&mut levels, &mut cells, &[(0, Some(0.43)), (1, Some(0.64))]);
        assert_eq!(levels[0].rate_per_s, 4_000.0);
        assert_eq!(levels[1].rate_per_s, 5_000.0);
        assert_eq!(cells[1].rate_per_s, 5_000.0);
        assert!(
            cells[1]
                .rate_from
                .contains("re-aimed on round 2's fresh servers (64% busy at 4000/s)"),
            "{}",
            cells[1].rate_from
        );
        // Never past the level's cap, and not on an unusable round.
        let cap = levels[1].cap_per_s;
        reaim(&mut levels, &mut cells, &[(1, Some(0.1)), (0, None)]);
        assert_eq!(levels[1].rate_per_s, cap);
        assert_eq!(levels[0].rate_per_s, 4_000.0);
    }
}
