//! Verdict logic on synthetic figures: a clear lead wins, a small or overlapping lead ties, and a
//! generator-bound run names no winner.

use brigade_compare::procstat::CpuBusy;
use brigade_compare::verdict::{
    contended, generator_bound, judge_cell, judge_scenario, CpuShape, Outcome, RunCpu,
    RuntimeFigures, Verdict,
};

fn figures(runtime: &str, values: &[f64]) -> RuntimeFigures {
    RuntimeFigures {
        runtime: runtime.to_owned(),
        values: values.iter().copied().map(Some).collect(),
        generator_bound: None,
        contended: None,
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
fn a_lead_the_runner_up_reverses_in_one_repeat_is_a_tie() {
    // hyper is 10% ahead on the medians, but axum was ahead in the third repeat.
    let verdict = judge_cell(
        &[
            figures("axum", &[1000.0, 1000.0, 1150.0]),
            figures("hyper", &[1120.0, 1100.0, 1100.0]),
        ],
        5.0,
    );
    assert!(
        matches!(verdict.outcome, Outcome::Tie { .. }),
        "{verdict:?}"
    );
    assert!(
        verdict.reason.contains("ahead in repeat 3"),
        "{}",
        verdict.reason
    );
}

#[test]
fn drift_that_hits_both_alike_does_not_hide_a_consistent_lead() {
    // The stores grow, so the second repeat is half as fast for everyone; actix stays 20% ahead.
    // The min–max ranges overlap widely, but in each repeat actix leads.
    let verdict = judge_cell(
        &[
            figures("axum", &[1000.0, 500.0]),
            figures("actix", &[1200.0, 600.0]),
        ],
        5.0,
    );
    match &verdict.outcome {
        Outcome::Winner {
            runtime,
            margin_pct,
            ..
        } => {
            assert_eq!(runtime, "actix");
            assert!((margin_pct - 20.0).abs() < 1e-9, "{margin_pct}");
        }
        other => panic!("expected a winner, got {other:?}"),
    }
    assert!(
        verdict.reason.contains(
            "actix leads axum by a median 20.0% over 2 repeats (paired leads 20.0%, 20.0%;"
        ),
        "{}",
        verdict.reason
    );
}

#[test]
fn a_failed_repeat_is_left_out_of_the_pairs() {
    let mut axum = figures("axum", &[1000.0, 1000.0]);
    axum.values[1] = None;
    let verdict = judge_cell(&[axum, figures("warp", &[1300.0, 1250.0])], 5.0);
    assert!(
        matches!(&verdict.outcome, Outcome::Winner { runtime, .. } if runtime == "warp"),
        "{verdict:?}"
    );
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

/// Process figures only (the CPUs not sampled): the sides' busy shares are the processes' own.
fn processes(generator: f64, server: f64) -> RunCpu {
    RunCpu {
        generator_process: generator,
        server_process: server,
        ..RunCpu::default()
    }
}

/// Process figures and the busy share of each side's CPUs (one CPU each).
fn sampled(
    generator: f64,
    generator_cpu: (f64, f64),
    server: f64,
    server_cpu: (f64, f64),
) -> RunCpu {
    let busy = |(busy_percent, task_percent): (f64, f64)| CpuBusy {
        busy_percent,
        task_percent,
        capacity_percent: 100.0,
    };
    RunCpu {
        generator_process: generator,
        server_process: server,
        generator_cpus: busy(generator_cpu),
        server_cpus: busy(server_cpu),
        companions: 0.0,
    }
}

#[test]
fn a_servers_companions_on_its_cpus_are_not_contention() {
    // The server process used 40% of its CPU, its database 45% more, nobody else anything.
    let mut run = sampled(30.0, (31.0, 31.0), 40.0, (86.0, 86.0));
    assert!(
        contended(&run, PINNED_1_1).is_some(),
        "the database looks like another process"
    );
    run.companions = 45.0;
    assert_eq!(contended(&run, PINNED_1_1), None);
}

#[test]
fn a_generator_without_headroom_is_generator_bound_whatever_the_server_did() {
    let idle_server = generator_bound(&processes(97.0, 60.0), PINNED_1_1).expect("bound");
    assert!(idle_server.contains("had headroom"), "{idle_server}");
    let full_server = generator_bound(&processes(97.0, 99.0), PINNED_1_1).expect("bound");
    assert!(
        full_server.contains("either side may be the limit"),
        "{full_server}"
    );
    assert!(
        generator_bound(&processes(50.0, 99.0), PINNED_1_1).is_none(),
        "generator has headroom: server-bound"
    );
    let two = CpuShape {
        generator_cpus: 2,
        server_cpus: 2,
        pinned: true,
    };
    assert!(
        generator_bound(&processes(100.0, 50.0), two).is_none(),
        "one of two CPUs is idle"
    );
    assert!(generator_bound(&processes(185.0, 50.0), two).is_some());
}

#[test]
fn a_generator_starved_by_other_processes_is_generator_bound_too() {
    // The generator itself used 40%, but its CPU was 97% busy: others took the rest.
    let run = sampled(40.0, (97.0, 95.0), 45.0, (50.0, 46.0));
    let why = generator_bound(&run, PINNED_1_1).expect("generator-bound");
    assert!(why.contains("97% busy"), "{why}");
}

#[test]
fn a_server_cpu_filled_by_others_is_contended_not_generator_bound() {
    // The server used 40% and other processes most of the rest of its CPU, while the generator
    // had headroom: the generator is not to blame, but the run is contended.
    let run = sampled(60.0, (70.0, 65.0), 40.0, (98.0, 96.0));
    assert!(generator_bound(&run, PINNED_1_1).is_none());
    let why = contended(&run, PINNED_1_1).expect("contended");
    assert!(why.contains("server"), "{why}");
}

#[test]
fn contention_counts_other_processes_task_time_not_the_runs_own_interrupts() {
    // 30% of the server's CPU went to interrupts (the loopback traffic): not contention.
    let quiet = sampled(60.0, (65.0, 62.0), 60.0, (92.0, 62.0));
    assert_eq!(contended(&quiet, PINNED_1_1), None);
    // A compiler took 35% of the generator's CPU.
    let noisy = sampled(40.0, (80.0, 75.0), 60.0, (70.0, 61.0));
    assert!(contended(&noisy, PINNED_1_1).unwrap().contains("generator"));
    // Without CPU samples nothing can be said.
    assert_eq!(contended(&processes(10.0, 10.0), PINNED_1_1), None);
}

#[test]
fn on_shared_cpus_the_generator_is_the_bottleneck_when_it_takes_the_larger_share() {
    let shared = CpuShape {
        generator_cpus: 1,
        server_cpus: 1,
        pinned: false,
    };
    let run = |generator: f64, server: f64| RunCpu {
        generator_process: generator,
        server_process: server,
        generator_cpus: CpuBusy {
            busy_percent: generator + server,
            task_percent: generator + server,
            capacity_percent: 100.0,
        },
        server_cpus: CpuBusy {
            busy_percent: generator + server,
            task_percent: generator + server,
            capacity_percent: 100.0,
        },
        companions: 0.0,
    };
    assert!(generator_bound(&run(60.0, 38.0), shared).is_some());
    assert!(generator_bound(&run(30.0, 68.0), shared).is_none());
    assert!(
        generator_bound(&run(40.0, 20.0), shared).is_none(),
        "the CPU was not full"
    );
}

#[test]
fn a_contended_run_names_no_winner() {
    let mut noisy = figures("warp", &[1000.0]);
    noisy.contended = Some("other processes used 40% of the server CPUs".into());
    let verdict = judge_cell(&[figures("axum", &[5000.0]), noisy], 5.0);
    assert_eq!(verdict.outcome, Outcome::Contended);
    assert!(verdict.reason.contains("warp"), "{}", verdict.reason);
    let scenario = judge_scenario(&[(10, verdict.clone()), (20, verdict)]);
    assert_eq!(scenario.outcome, Outcome::Contended);
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
