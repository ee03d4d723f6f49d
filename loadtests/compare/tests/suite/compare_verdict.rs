//! Verdict logic on synthetic figures: which runs are generator-bound or contended, and how a
//! scenario sums its cells up. The four-way rule itself is tested in `brigade-stats` and `judge`.

use brigade_compare::judge::judge_scenario;
use brigade_meter::runcpu::{contended, generator_bound, CpuShape};
use brigade_records::proc::CpuBusy;
use brigade_records::runcpu::RunCpu;
use brigade_report::verdict::{Outcome, Verdict};

const PINNED_1_1: CpuShape = CpuShape {
    generator_cpus: 1,
    server_cpus: 1,
    pinned: true,
};

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
            cell(Outcome::Undecided {
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
fn different_winners_at_different_user_counts_leave_the_scenario_undecided() {
    let verdict = judge_scenario(&[(10, win("axum", 8.0)), (30, win("actix", 9.0))]);
    assert!(
        matches!(&verdict.outcome, Outcome::Undecided { leaders } if leaders.len() == 2),
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
