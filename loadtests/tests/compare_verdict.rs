//! Verdict logic on synthetic figures: a clear lead wins, a small or overlapping lead ties, and a
//! generator-bound run names no winner.

use brigade_loadtests::compare::verdict::{
    generator_bound, judge_cell, judge_scenario, CpuShape, Outcome, RuntimeFigures, Verdict,
};

fn figures(runtime: &str, values: &[f64]) -> RuntimeFigures {
    RuntimeFigures {
        runtime: runtime.to_owned(),
        values: values.to_vec(),
        generator_bound: None,
    }
}

const PINNED_1_1: CpuShape = CpuShape {
    generator_cpus: 1,
    server_cpus: 1,
    pinned: true,
};

#[test]
fn a_clear_lead_beyond_noise_and_spread_wins_with_its_margin() {
    let verdict = judge_cell(
        &[
            figures("axum", &[1000.0, 1010.0, 990.0]),
            figures("actix", &[1200.0, 1190.0, 1210.0]),
            figures("warp", &[900.0, 905.0, 895.0]),
        ],
        5.0,
    );
    match &verdict.outcome {
        Outcome::Winner {
            runtime,
            runner_up,
            margin_pct,
        } => {
            assert_eq!(runtime, "actix");
            assert_eq!(runner_up, "axum");
            assert!((margin_pct - 20.0).abs() < 1e-9, "{margin_pct}");
        }
        other => panic!("expected a winner, got {other:?}"),
    }
    assert_eq!(verdict.label(), "actix +20.0%");
}

#[test]
fn a_lead_under_the_noise_floor_is_a_tie() {
    let verdict = judge_cell(
        &[figures("axum", &[1000.0]), figures("hyper", &[1030.0])],
        5.0,
    );
    assert_eq!(
        verdict.outcome,
        Outcome::Tie {
            leaders: vec!["hyper".into(), "axum".into()]
        }
    );
    assert!(verdict.reason.contains("noise floor"), "{}", verdict.reason);
    // The same lead with a 2% floor is a win.
    let verdict = judge_cell(
        &[figures("axum", &[1000.0]), figures("hyper", &[1030.0])],
        2.0,
    );
    assert!(matches!(verdict.outcome, Outcome::Winner { .. }));
}

#[test]
fn a_lead_within_the_spread_of_the_repeats_is_a_tie() {
    // 10% ahead on the median, but axum's fastest run beats hyper's slowest.
    let verdict = judge_cell(
        &[
            figures("axum", &[900.0, 1000.0, 1150.0]),
            figures("hyper", &[1120.0, 1100.0, 1200.0]),
        ],
        5.0,
    );
    assert!(
        matches!(verdict.outcome, Outcome::Tie { .. }),
        "{verdict:?}"
    );
    assert!(verdict.reason.contains("overlap"), "{}", verdict.reason);
}

#[test]
fn only_runtimes_within_the_noise_of_the_leader_share_a_tie() {
    let verdict = judge_cell(
        &[
            figures("a", &[1000.0]),
            figures("b", &[990.0]),
            figures("c", &[500.0]),
        ],
        5.0,
    );
    assert_eq!(
        verdict.outcome,
        Outcome::Tie {
            leaders: vec!["a".into(), "b".into()]
        }
    );
}

#[test]
fn a_generator_bound_run_names_no_winner_however_large_the_lead() {
    let mut slow = figures("warp", &[1000.0]);
    slow.generator_bound = Some("generator at 99%".into());
    let verdict = judge_cell(&[figures("axum", &[5000.0]), slow], 5.0);
    assert_eq!(verdict.outcome, Outcome::GeneratorBound);
    assert_eq!(verdict.label(), "generator-bound");
}

#[test]
fn fewer_than_two_runtimes_with_results_is_no_data() {
    let verdict = judge_cell(&[figures("axum", &[5000.0]), figures("warp", &[])], 5.0);
    assert_eq!(verdict.outcome, Outcome::NoData);
}

#[test]
fn generator_bound_needs_a_saturated_generator_and_a_server_with_headroom() {
    assert!(generator_bound(97.0, 60.0, PINNED_1_1).is_some());
    assert!(
        generator_bound(97.0, 99.0, PINNED_1_1).is_none(),
        "server saturated too"
    );
    assert!(
        generator_bound(50.0, 60.0, PINNED_1_1).is_none(),
        "generator has headroom"
    );
    let two_generator_cpus = CpuShape {
        generator_cpus: 2,
        server_cpus: 2,
        pinned: true,
    };
    assert!(
        generator_bound(100.0, 50.0, two_generator_cpus).is_none(),
        "one of two CPUs is not saturated"
    );
    assert!(generator_bound(185.0, 50.0, two_generator_cpus).is_some());
}

#[test]
fn on_shared_cpus_the_generator_is_the_bottleneck_when_it_takes_the_larger_share() {
    let shared = CpuShape {
        generator_cpus: 1,
        server_cpus: 1,
        pinned: false,
    };
    assert!(generator_bound(60.0, 38.0, shared).is_some());
    assert!(generator_bound(30.0, 68.0, shared).is_none());
    assert!(
        generator_bound(40.0, 20.0, shared).is_none(),
        "the CPU was not full"
    );
}

fn cell(outcome: Outcome) -> Verdict {
    Verdict {
        outcome,
        reason: String::new(),
    }
}

fn win(runtime: &str, margin: f64) -> Verdict {
    cell(Outcome::Winner {
        runtime: runtime.into(),
        runner_up: "x".into(),
        margin_pct: margin,
    })
}

#[test]
fn a_scenario_is_won_by_the_only_runtime_that_wins_most_user_counts() {
    let verdict = judge_scenario(&[
        (10, win("axum", 8.0)),
        (20, win("axum", 14.0)),
        (
            30,
            cell(Outcome::Tie {
                leaders: vec!["axum".into(), "x".into()],
            }),
        ),
    ]);
    match &verdict.outcome {
        Outcome::Winner {
            runtime,
            margin_pct,
            ..
        } => {
            assert_eq!(runtime, "axum");
            assert_eq!(*margin_pct, 8.0, "the smallest lead is reported");
        }
        other => panic!("expected a winner, got {other:?}"),
    }
    assert!(verdict.reason.contains("8.0–14.0%"), "{}", verdict.reason);
}

#[test]
fn different_winners_at_different_user_counts_make_a_tie() {
    let verdict = judge_scenario(&[(10, win("axum", 8.0)), (30, win("actix", 9.0))]);
    assert!(
        matches!(&verdict.outcome, Outcome::Tie { leaders } if leaders.len() == 2),
        "{verdict:?}"
    );
}

#[test]
fn a_scenario_generator_bound_everywhere_has_no_winner_and_partial_bounds_are_noted() {
    let all = judge_scenario(&[
        (10, cell(Outcome::GeneratorBound)),
        (20, cell(Outcome::GeneratorBound)),
    ]);
    assert_eq!(all.outcome, Outcome::GeneratorBound);
    let some = judge_scenario(&[
        (10, cell(Outcome::GeneratorBound)),
        (20, win("hyper", 30.0)),
    ]);
    assert!(matches!(some.outcome, Outcome::Winner { .. }));
    assert!(
        some.reason.contains("generator-bound at 10 users"),
        "{}",
        some.reason
    );
}
