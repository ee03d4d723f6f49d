//! The terminal table `brigade load` prints: one line per route and the total, then the errors by
//! kind and the run's settings, in plain text that reads the same in a terminal, a log or a CI job.

use std::fmt::Write as _;

use brigade_records::result::{Errors, LoadResult, RouteResult};

/// The protocol line (for any protocol but plaintext HTTP/1.1) and, for a TLS run, its
/// handshakes.
fn write_protocol(out: &mut String, result: &LoadResult) {
    let s = &result.settings;
    if s.protocol != brigade_records::protocol::Protocol::H1 {
        let streams = if s.protocol.multiplexed() {
            format!(", {} stream(s) per connection", s.streams)
        } else {
            String::new()
        };
        let alpn = match result.tls.as_ref().and_then(|t| t.alpn.as_deref()) {
            Some(alpn) => format!(" (ALPN {alpn})"),
            None => String::new(),
        };
        let _ = writeln!(out, "protocol: {}{alpn}{streams}", s.protocol);
    }
    if let Some(tls) = &result.tls {
        let kind = |name: &str, h: &brigade_records::result::HandshakeResult| {
            format!(
                "{} {name} (mean {:.2} ms, p50 {:.2}, p99 {:.2}, max {:.2})",
                brigade_records::number::grouped(h.count),
                h.mean_ms,
                h.p50_ms,
                h.p99_ms,
                h.max_ms
            )
        };
        let timed = if s.protocol.quic() {
            "QUIC and TLS together, from the first packet; quinn does not say which resumed"
        } else {
            "TLS only, after the TCP connect"
        };
        let _ = writeln!(
            out,
            "TLS handshakes: {}, {}; {:.1}/s ({timed})",
            kind("full", &tls.full),
            kind("resumed", &tls.resumed),
            tls.handshakes_per_s
        );
    }
}

/// Renders `result` as a plain-text table.
pub fn render(result: &LoadResult) -> String {
    let mut out = String::new();
    write_heading(&mut out, result);
    write_protocol(&mut out, result);
    out.push('\n');
    write_routes(&mut out, result);
    out.push('\n');
    write_footer(&mut out, result);
    out
}

/// The run's model, window, threads, targets and seed.
fn write_heading(out: &mut String, result: &LoadResult) {
    let s = &result.settings;
    let model = match (s.rate, s.users) {
        (Some(rate), _) => format!(
            "open loop {rate} req/s over {} connections{}",
            s.connections,
            s.pace_tick_ms
                .map_or(String::new(), |t| format!(", sent on {t} ms ticks"))
        ),
        (None, Some(users)) => format!("closed loop {users} users"),
        (None, None) => "closed loop".to_string(),
    };
    let _ = writeln!(
        out,
        "scenario {}: {model}, {:.1} s measured after {:.1} s warm-up, {} thread(s), {}",
        s.scenario,
        result.elapsed_s,
        s.warmup_s,
        s.threads,
        if s.keepalive {
            "keep-alive"
        } else {
            "a connection per request"
        },
    );
    let _ = writeln!(out, "targets: {}", s.targets.join(", "));
    if let Some(seed) = s.seed {
        let _ = writeln!(
            out,
            "seed: {seed} (--seed {seed} sends the same requests again)"
        );
    }
}

/// One row per route (and the total under a rule when there are several), columns aligned.
fn write_routes(out: &mut String, result: &LoadResult) {
    let header = [
        "route", "requests", "hits/s", "KiB/s", "mean ms", "p50 ms", "p90 ms", "p99 ms",
        "p99.9 ms", "max ms", "errors",
    ];
    let mut rows: Vec<[String; 11]> = result.routes.iter().map(row).collect();
    if result.routes.len() != 1 {
        rows.push(row(&result.total));
    }
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i == 0 {
                let _ = write!(l, "{cell:<w$}");
            } else {
                let _ = write!(l, "  {cell:>w$}");
            }
        }
        l.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&header.map(String::from)));
    let rule: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
    for (i, r) in rows.iter().enumerate() {
        if i + 1 == rows.len() && result.routes.len() != 1 {
            let _ = writeln!(out, "{}", "-".repeat(rule));
        }
        let _ = writeln!(out, "{}", line(r));
    }
}

/// Errors by kind (in total and per route), bandwidth, generator CPU, the open loop's note.
fn write_footer(out: &mut String, result: &LoadResult) {
    let s = &result.settings;
    let e = &result.total.errors;
    if e.total() == 0 {
        let _ = writeln!(out, "errors: none");
    } else {
        let _ = writeln!(
            out,
            "errors: {} ({:.2}%): {}",
            e.total(),
            percent(e.total(), result.total.requests),
            kinds(e)
        );
        for r in result.routes.iter().filter(|r| r.errors.total() > 0) {
            let _ = writeln!(out, "  {}: {}", r.name, kinds(&r.errors));
        }
    }
    let _ = writeln!(
        out,
        "bandwidth: {:.1} KiB/s ({} B sent, {} B received); generator CPU {:.0}% of one core",
        result.total.bytes_per_s / 1024.0,
        result.total.bytes_sent,
        result.total.bytes_received,
        result.generator_cpu_percent
    );
    if s.rate.is_some() {
        let _ = writeln!(out, "latency is measured from each request's intended send time (coordinated omission corrected)");
    }
}

fn row(r: &RouteResult) -> [String; 11] {
    let l = &r.latency;
    let errors = r.errors.total();
    [
        r.name.clone(),
        r.requests.to_string(),
        format!("{:.1}", r.hits_per_s),
        format!("{:.1}", r.bytes_per_s / 1024.0),
        format!("{:.2}", l.mean_ms),
        format!("{:.2}", l.p50_ms),
        format!("{:.2}", l.p90_ms),
        format!("{:.2}", l.p99_ms),
        format!("{:.2}", l.p999_ms),
        format!("{:.2}", l.max_ms),
        if errors == 0 {
            "0".into()
        } else {
            format!("{errors} ({:.1}%)", percent(errors, r.requests))
        },
    ]
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn kinds(e: &Errors) -> String {
    let all = [
        ("connect", e.connect),
        ("timeout", e.timeout),
        ("reset", e.reset),
        ("4xx", e.status_4xx),
        ("5xx", e.status_5xx),
        ("other", e.other),
    ];
    all.iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}
