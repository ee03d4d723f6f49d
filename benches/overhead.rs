//! The cost of Brigade's sharing: `GET /bench/hello` through the route table (the waiter service on
//! the memory store) against a hand-written minimal hello on the same runtime, with the same threads,
//! listener and shutdown, measured side by side in one run under the same load.
//!
//! Run: `cargo bench --bench overhead` (env: `OVERHEAD_ROUNDS` (default 5), `OVERHEAD_SECS` (3),
//! `OVERHEAD_USERS` (32), `OVERHEAD_RUNTIMES` (all compiled in)). Servers run as child processes
//! pinned to CPU 0 with one worker; the generator runs here, pinned to the other CPUs. Rounds
//! interleave runtimes and alternate which variant goes first, so drift hits both alike.
//!
//! Two ratios per runtime, medians over rounds:
//! - throughput: Brigade req/s ÷ baseline req/s — meaningful only when the server, not the
//!   generator, is saturated (the table says which);
//! - CPU efficiency: baseline server CPU per request ÷ Brigade server CPU per request — the honest
//!   measure when the generator is the bottleneck, as it is for hello on a 2-core machine.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use brigade_kit::announce::Announcement;
use brigade_load::engine::{self, LoadConfig};
use brigade_meter::procstat;
use brigade_stats::median;

struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut cmd = if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
            let mut c = Command::new("taskset");
            c.args(["-c", "0", env!("CARGO_BIN_EXE_brigade")]);
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_brigade"))
        };
        let mut child = cmd
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .expect("brigade starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("a listening line").unwrap();
            if let Some(Announcement::Listening(l)) = Announcement::parse(&line) {
                break l.url;
            }
        };
        Server { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

#[derive(Default)]
struct Samples {
    rps: Vec<f64>,
    cpu_us_per_req: Vec<f64>,
    generator_cpu: Vec<f64>,
}

fn measure(
    server: &Server,
    cfg: &LoadConfig,
    scenario: &brigade_load::scenario::Scenario,
    into: &mut Samples,
) {
    let mut warm = cfg.clone();
    warm.duration = Some(Duration::from_secs(1));
    engine::run(&warm, scenario).expect("warm-up");
    let pid = server.child.id();
    let before = procstat::read(pid).expect("server stats");
    let r = engine::run(cfg, scenario).expect("load");
    let after = procstat::read(pid).expect("server stats");
    assert_eq!(
        r.total.errors.total(),
        0,
        "errors during the run: {:?}",
        r.total.errors
    );
    into.rps.push(r.total.hits_per_s);
    into.cpu_us_per_req
        .push((after.cpu_s - before.cpu_s) * 1e6 / r.total.requests.max(1) as f64);
    into.generator_cpu.push(r.generator_cpu_percent);
}

fn main() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let rounds = env("OVERHEAD_ROUNDS", 5);
    let secs = env("OVERHEAD_SECS", 3);
    let users = env("OVERHEAD_USERS", 32) as u32;
    let runtimes: Vec<String> = match std::env::var("OVERHEAD_RUNTIMES") {
        Ok(v) => v.split(',').map(str::to_string).collect(),
        Err(_) => brigade_runtimes::names()
            .into_iter()
            .map(str::to_string)
            .collect(),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let generator_cpus: Vec<usize> = if cores > 1 {
        (1..cores).collect()
    } else {
        vec![0]
    };
    let scenario = brigade_load::Registry::new()
        .get("hello")
        .expect("the hello scenario");

    let mut servers = BTreeMap::new();
    for rt in &runtimes {
        let native = Server::start(&[
            "serve-baseline",
            "--runtime",
            rt,
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
        ]);
        let brigade = Server::start(&[
            "serve",
            "--runtime",
            rt,
            "--service",
            "waiter",
            "--store",
            "memory",
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
        ]);
        servers.insert(rt.clone(), (native, brigade));
    }
    let mut results: BTreeMap<(String, &str), Samples> = BTreeMap::new();
    for round in 0..rounds {
        for rt in &runtimes {
            let (native, brigade) = &servers[rt];
            let order: [(&str, &Server); 2] = if round % 2 == 0 {
                [("baseline", native), ("brigade", brigade)]
            } else {
                [("brigade", brigade), ("baseline", native)]
            };
            for (variant, server) in order {
                let cfg = LoadConfig {
                    targets: BTreeMap::from([("*".to_string(), server.url.clone())]),
                    users: Some(users),
                    duration: Some(Duration::from_secs(secs)),
                    warmup: Duration::ZERO,
                    threads: generator_cpus.len() as u32,
                    cpus: Some(generator_cpus.clone()),
                    progress: false,
                    ..LoadConfig::default()
                };
                measure(
                    server,
                    &cfg,
                    &scenario,
                    results.entry((rt.clone(), variant)).or_default(),
                );
            }
            eprintln!("round {}/{rounds}: {rt} done", round + 1);
        }
    }

    let mut out = String::new();
    out.push_str(&format!(
        "hello overhead: {rounds} rounds x {secs}s, {users} connections, server on CPU 0 with 1 worker, generator on CPUs {generator_cpus:?} ({cores} cores)\n\n"
    ));
    out.push_str("| runtime | baseline req/s | Brigade req/s | throughput ratio | baseline CPU µs/req | Brigade CPU µs/req | CPU efficiency | generator CPU % | bound by |\n");
    out.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for rt in &runtimes {
        let b = &results[&(rt.clone(), "baseline")];
        let g = &results[&(rt.clone(), "brigade")];
        let (brps, grps) = (median(&b.rps), median(&g.rps));
        let (bcpu, gcpu) = (median(&b.cpu_us_per_req), median(&g.cpu_us_per_req));
        let gen_cpu = median(&[b.generator_cpu.clone(), g.generator_cpu.clone()].concat());
        // The server's CPU use follows from its CPU per request and its rate (one worker, one core).
        let server_cpu = (bcpu * brps).max(gcpu * grps) / 1e4;
        let bound = if gen_cpu >= 0.9 * 100.0 * generator_cpus.len() as f64 {
            "generator"
        } else if server_cpu >= 90.0 {
            "server"
        } else {
            "neither: waiting (other processes on these CPUs?)"
        };
        out.push_str(&format!(
            "| {rt} | {brps:.0} | {grps:.0} | {:.3} | {bcpu:.1} | {gcpu:.1} | {:.3} | {gen_cpu:.0} | {bound} |\n",
            grps / brps,
            bcpu / gcpu
        ));
    }
    print!("{out}");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("overhead.md");
    if let Ok(mut f) = std::fs::File::create(&path) {
        let _ = f.write_all(out.as_bytes());
        eprintln!("written to {}", path.display());
    }
}
