//! Extreme flag values get a clear error, never a panic (exit code 101): the cases that panicked
//! before, each through the real binary. (Issue 21 walks every flag of the command tree; these
//! are the ones found so far.)

use std::process::Command;

/// Runs the binary with `args`; returns its exit code and stderr.
fn run(args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn extreme_rates_and_start_times_are_refused_with_a_message_not_a_panic() {
    for (args, says) in [
        (
            &["load", "--rate", "1e-20", "--target", "http://127.0.0.1:9"][..],
            "requests per second from",
        ),
        (
            &["load", "--rate", "1e300", "--target", "http://127.0.0.1:9"][..],
            "requests per second from",
        ),
        (
            &[
                "load",
                "--start-at",
                "10000000000000000000",
                "--target",
                "http://127.0.0.1:9",
            ][..],
            "past any time",
        ),
        (
            &["compare", "--rate", "1e-20", "--scenarios", "hello"][..],
            "requests per second from",
        ),
        (
            &[
                "compare",
                "--slo",
                "p99<1s",
                "--slo-start",
                "1e-20",
                "--scenarios",
                "hello",
            ][..],
            "requests per second from",
        ),
    ] {
        let (code, stderr) = run(args);
        assert!(code == 1 || code == 2, "{args:?}: exit {code}\n{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
