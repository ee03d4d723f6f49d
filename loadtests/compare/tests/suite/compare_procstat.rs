//! `/proc` sampling and CPU pinning on real child processes. A busy 2-core machine may give a
//! spinning child little CPU and the sampler few turns: the assertions compare the children with
//! each other and with their CPUs, and ask of the sampler only the samples a usage needs.

use std::process::{Child, Command};
use std::time::Duration;

use brigade_meter::pin;
use brigade_meter::procstat::{self, Sampler};

/// Kills the child when the test ends, pass or fail.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `pid` has used `cpu_s` seconds of CPU (an event, not a duration: on a busy machine
/// it takes as long as it takes), and the sampler has had time for a few samples since.
fn until_it_ran(pid: u32, cpu_s: f64) {
    let started = std::time::Instant::now();
    while procstat::read(pid).unwrap().cpu_s < cpu_s {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the busy child never got {cpu_s} s of CPU"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn(script: &str, cpus: Option<&[usize]>) -> Reaped {
    let mut command = Command::new("sh");
    command.args(["-c", script]);
    Reaped(pin::spawn_pinned(&mut command, cpus).expect("sh starts"))
}

#[test]
fn a_busy_child_shows_cpu_and_memory_and_an_idle_one_shows_no_cpu() {
    let busy = spawn("while :; do :; done", None);
    let idle = spawn("sleep 30", None);
    let sampler = Sampler::start(&[busy.0.id(), idle.0.id()], &[], Duration::from_millis(50));
    until_it_ran(busy.0.id(), 0.5);
    let end = sampler.now_s();
    let series = sampler.finish().processes;
    assert_eq!(series.len(), 2);
    assert!(
        series[0].samples.len() >= 2,
        "{} samples",
        series[0].samples.len()
    );

    let busy_usage = series[0].usage(0.0, end);
    let idle_usage = series[1].usage(0.0, end);
    // A spinning shell takes whatever CPU it is given, a sleeping one none.
    assert!(
        busy_usage.cpu_percent > idle_usage.cpu_percent + 1.0,
        "busy child: {busy_usage:?}, idle child: {idle_usage:?}"
    );
    assert!(
        busy_usage.cpu_percent < 150.0,
        "one thread cannot use more than one core: {busy_usage:?}"
    );
    assert!(busy_usage.peak_rss_mib > 0.0, "{busy_usage:?}");
    assert!(
        idle_usage.cpu_percent < 10.0,
        "sleeping child: {idle_usage:?}"
    );

    let reading = procstat::read(busy.0.id()).unwrap();
    assert!(reading.rss_kib > 0);
    assert!(procstat::peak_rss_kib(busy.0.id()).unwrap() >= reading.rss_kib);
}

#[test]
fn reading_a_process_that_does_not_exist_fails() {
    assert!(procstat::read(u32::MAX / 2).is_err());
}

#[test]
fn a_child_started_pinned_is_confined_to_its_cpus() {
    let available = pin::available_cpus();
    let Some(&last) = available.last() else {
        return;
    };
    let child = spawn("sleep 30", Some(&[last]));
    let allowed = procstat::allowed_cpus(child.0.id()).expect("Cpus_allowed_list is readable");
    assert_eq!(allowed, last.to_string());
    // The thread that spawned it is not pinned.
    assert_eq!(pin::available_cpus(), available);
}

#[test]
fn a_cpu_running_a_pinned_busy_child_reads_at_least_as_busy_as_the_child() {
    let available = pin::available_cpus();
    let Some(&last) = available.last() else {
        return;
    };
    let busy = spawn("while :; do :; done", Some(&[last]));
    let sampler = Sampler::start(&[busy.0.id()], &[vec![last]], Duration::from_millis(50));
    until_it_ran(busy.0.id(), 0.5);
    let end = sampler.now_s();
    let recorded = sampler.finish();
    let child = recorded.processes[0].usage(0.0, end);
    let cpu = recorded.cpus[0].busy(0.0, end);
    assert_eq!(cpu.capacity_percent, 100.0);
    assert!(child.cpu_percent > 0.0, "{child:?}");
    // The CPU's own counters include the child's time (tick accounting allows some slack).
    assert!(
        cpu.busy_percent + 15.0 >= child.cpu_percent,
        "{cpu:?} vs {child:?}"
    );
    assert!(cpu.busy_percent <= 100.0 + 1e-6 && cpu.task_percent <= cpu.busy_percent + 1e-6);
}

#[test]
fn cpu_counters_of_an_unknown_cpu_are_an_error() {
    assert!(procstat::read_cpus(&[100_000]).is_err());
    let sample = procstat::read_cpus(&pin::available_cpus()).unwrap();
    assert!(sample.total_s >= sample.busy_s && sample.busy_s >= sample.task_s);
}
