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

/// Placeholders of flags whose value is text a user names (a path, a URL, a list of names, a
/// command): an extreme number there is a name, and the command would run with it.
const TEXT_VALUES: &[&str] = &[
    "OUT",
    "FILE",
    "DIR",
    "DATA_DIR",
    "TEMPLATE",
    "BINARY",
    "MONGODB_URI",
    "DATABASE_PREFIX",
    "RUNTIMES",
    "RUNTIME",
    "STORES",
    "STORE",
    "SCENARIOS",
    "SCENARIO",
    "SERVICE",
    "VIA",
    "LOG_FORMAT",
    "PEERS",
    "PEER",
    "FAULTS",
    "DB_STOP_COMMAND",
    "DB_START_COMMAND",
    "SOAK_SCENARIO",
    "SERVER_COMMAND",
    "GROWTH",
    "TARGET",
    "FIXTURES",
    "JSON",
    "LABEL",
    "REJUDGE",
    "BASELINE",
    "EXTERNAL",
    "HANDICAP",
    "CSV",
    "REPORT",
    "NAME",
    "URL",
];

/// Every subcommand path and each of its flags that takes a value, from the binary's own help
/// (the command tree as a user walks it).
fn value_flags() -> Vec<(Vec<String>, String, String)> {
    let help = |path: &[String]| {
        let out = Command::new(env!("CARGO_BIN_EXE_brigade"))
            .args(path)
            .arg("--help")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mut paths: Vec<Vec<String>> = Vec::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let text = help(&path);
        let mut in_commands = false;
        for line in text.lines() {
            if line.starts_with("Commands:") {
                in_commands = true;
                continue;
            }
            if in_commands {
                let Some(name) = line
                    .strip_prefix("  ")
                    .and_then(|l| l.split_whitespace().next())
                else {
                    in_commands = false;
                    continue;
                };
                if name != "help" && !line.starts_with("   ") {
                    todo.push([path.clone(), vec![name.to_owned()]].concat());
                }
            }
        }
        paths.push(path);
    }
    let mut flags = Vec::new();
    for path in paths.into_iter().filter(|p| !p.is_empty()) {
        for line in help(&path).lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(at) = words.iter().position(|w| w.starts_with("--")) else {
                continue;
            };
            let (Some(flag), Some(value)) = (words.get(at), words.get(at + 1)) else {
                continue;
            };
            if !line.trim_start().starts_with('-') || !value.starts_with('<') {
                continue;
            }
            let placeholder = value.trim_matches(|c| c == '<' || c == '>' || c == '.');
            if !TEXT_VALUES.contains(&placeholder) {
                flags.push((path.clone(), flag.to_string(), placeholder.to_owned()));
            }
        }
    }
    flags
}

/// What one invocation did: exited with a code (None: killed), and what it wrote to stderr.
type Invoked = (Option<i32>, String);

/// Runs the binary with `args`, stopped after 5 s if it is still running.
fn invoke(args: &[String]) -> Invoked {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_brigade"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // A value the command takes starts its work: it is stopped after a while (not judged by the
    // time it took), and must not have panicked until then.
    let started = std::time::Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > std::time::Duration::from_secs(5) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    (code, reader.join().unwrap())
}

/// Every duration, rate, count, port and time flag of every subcommand, given values past any
/// sensible range: each is refused with a message (exit 1 or 2) or, where the value is one the
/// command may take, runs; it never panics (101), whatever the flag.
#[test]
fn no_flag_panics_on_an_extreme_value() {
    let flags = value_flags();
    assert!(
        flags.len() >= 60,
        "the walk found {} value flags",
        flags.len()
    );
    let extremes = [
        "18446744073709551616",
        "-1",
        "1e309",
        "99999999999999999999h",
    ];
    let jobs: Vec<Vec<String>> = flags
        .iter()
        .flat_map(|(path, flag, _)| {
            extremes
                .iter()
                .map(move |v| [path.clone(), vec![flag.clone(), v.to_string()]].concat())
        })
        .collect();
    let outcomes: Vec<(Vec<String>, Invoked)> = std::thread::scope(|s| {
        let chunks: Vec<_> = jobs
            .chunks(jobs.len().div_ceil(4))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|args| (args.clone(), invoke(args)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        chunks.into_iter().flat_map(|c| c.join().unwrap()).collect()
    });
    let ran: Vec<String> = outcomes
        .iter()
        .filter(|(_, (code, _))| code.is_none())
        .map(|(args, _)| args.join(" "))
        .collect();
    let panics: Vec<String> = outcomes
        .iter()
        .filter(|(_, (code, stderr))| *code == Some(101) || stderr.contains("panicked"))
        .map(|(args, (_, stderr))| format!("{}: {stderr}", args.join(" ")))
        .collect();
    eprintln!(
        "{} flags × {} values; taken and run (stopped after 5 s): {ran:?}",
        flags.len(),
        extremes.len()
    );
    assert!(panics.is_empty(), "panics:\n{}", panics.join("\n"));
}
