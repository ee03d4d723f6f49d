//! Extreme flag values get a clear error, never a panic (exit code 101), and `probe` answers
//! within its timeout whatever the server does: the cases that panicked or hung
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
                "serve",
                "--service",
                "all",
                "--store",
                "memory",
                "--listen",
                "127.0.0.1:65535",
            ][..],
            "past 65535",
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

#[test]
fn probe_gives_up_on_a_server_that_trickles_its_answer_within_its_timeout() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/ready", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        let mut head = [0u8; 1024];
        let _ = socket.read(&mut head);
        let _ = socket.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
        // A byte every 50 ms: the whole body would take 80 minutes.
        for _ in 0..100_000 {
            if socket.write_all(b"x").is_err() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    let (code, stderr) = run(&["probe", &url, "--timeout-ms", "500"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("no whole answer within 500 ms"), "{stderr}");
}
