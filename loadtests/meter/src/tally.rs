//! What the servers counted against what the generators sent: the check that a run measured what
//! it says it did, exactly, on servers Brigade did not start (a cluster's pods).
//!
//! The servers' side is the difference of each pod's request counters
//! (`brigade_http_requests_total{method, route, status}`) between two readings taken around the
//! generators' run: after the fixtures were made and before the generators started, and after
//! every generator ended. The generators' side is every part's answers by status class, the
//! warm-up's included (`RouteResult::statuses`, `warmup_statuses`), lost attempts included: what
//! went on the wire. The requests the servers count beyond the generators' are separated as
//! follows:
//! - **probes and scrapes** by route: a route no request of the scenario aims at (`/ready`,
//!   `/health`, `/metrics`) is listed apart, outside the agreement;
//! - **the setup** by time: the first reading is taken after the fixtures were made;
//! - **peer calls** (tables asking the waiter) by the callers' own counters
//!   (`brigade_peer_requests_total{peer, status}`): a peer call is a GET, and the peer metric has
//!   no route, so the callee's GET routes' surplus over the generators is matched to them, class by
//!   class, and must add up to them exactly.
//!
//! A scenario's route and a server's are matched by service, method and path pattern, every
//! placeholder (`{{pick waiters}}`, `{id}`) made `{}` and the query left out. Requests nothing
//! answered (refused, reset, timed out) may or may not have reached a server's counters: where
//! there are any, the agreement is only as exact as their number, and the tally says so.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use brigade_load::scenario::Scenario;
use brigade_records::result::LoadResult;

/// One pod's `/metrics` text, by service and pod name.
pub type Readings = BTreeMap<String, BTreeMap<String, String>>;

/// A route's answers of one status class, on one service.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// The service (the scenario's target name).
    pub service: String,
    /// The method.
    pub method: String,
    /// The path pattern, placeholders made `{}`.
    pub route: String,
    /// The status class (`2xx`, `4xx`, …).
    pub class: String,
}

/// One line of the tally: what the servers counted for a key, what the generators sent, and the
/// peer calls matched to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Which route and class.
    pub key: Key,
    /// The servers' count over the run (every pod of the service).
    pub servers: u64,
    /// The generators' requests, measured and warm-up, every part.
    pub generators: u64,
    /// Peer calls matched to it (GET routes of a service other services call).
    pub peers: u64,
}

impl Row {
    /// What is left unexplained (servers minus generators minus peers).
    pub fn difference(&self) -> i128 {
        i128::from(self.servers) - i128::from(self.generators) - i128::from(self.peers)
    }
}

/// The whole check.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// The scenario's routes, class by class.
    pub rows: Vec<Row>,
    /// Routes the scenario does not aim at (probes, scrapes), with the servers' counts.
    pub outside: Vec<Row>,
    /// Peer calls by callee service and class, from the callers' counters.
    pub peer_calls: BTreeMap<(String, String), u64>,
    /// Generator requests nothing answered.
    pub unanswered: u64,
    /// Everything that keeps the tally from agreeing exactly, in words.
    pub problems: Vec<String>,
}

impl Tally {
    /// Whether every difference is accounted for.
    pub fn agrees(&self) -> bool {
        self.problems.is_empty()
    }

    /// The tally as a Markdown table, with its verdict first.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        if self.agrees() {
            out.push_str(&format!(
                "**The servers' counters agree with the generators exactly**: {} requests over {} routes × classes, {} peer calls matched, every difference accounted for{}.\n\n",
                self.rows.iter().map(|r| r.servers).sum::<u64>(),
                self.rows.len(),
                self.peer_calls.values().sum::<u64>(),
                if self.unanswered > 0 {
                    format!(" (within {} requests nothing answered)", self.unanswered)
                } else {
                    String::new()
                }
            ));
        } else {
            out.push_str("**The servers' counters do not agree with the generators**:\n\n");
            for p in &self.problems {
                out.push_str(&format!("- {p}\n"));
            }
            out.push('\n');
        }
        out.push_str("| service | method | route | class | servers | generators | peer calls | difference |\n");
        out.push_str("| --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n");
        for r in &self.rows {
            let k = &r.key;
            out.push_str(&format!(
                "| {} | {} | `{}` | {} | {} | {} | {} | {} |\n",
                k.service,
                k.method,
                k.route,
                k.class,
                r.servers,
                r.generators,
                r.peers,
                r.difference()
            ));
        }
        if !self.outside.is_empty() {
            out.push_str("\nCounted by the servers outside the run's routes (probes, scrapes): ");
            let words: Vec<String> = self
                .outside
                .iter()
                .map(|r| {
                    format!(
                        "{} {} `{}` {} {}",
                        r.key.service, r.key.method, r.key.route, r.key.class, r.servers
                    )
                })
                .collect();
            out.push_str(&words.join(", "));
            out.push_str(".\n");
        }
        out
    }
}

/// Compares what the servers counted between `before` and `after` with what `parts` (every
/// generator result of the run, lost attempts included) sent of `scenario`.
pub fn tally(
    scenario: &Scenario,
    parts: &[LoadResult],
    before: &Readings,
    after: &Readings,
) -> Result<Tally> {
    let mut t = Tally::default();
    let (generators, unanswered, routes) = generator_counts(scenario, parts, &mut t.problems)?;
    t.unanswered = unanswered;
    let (servers, peers) = server_counts(before, after, &mut t.problems)?;
    t.peer_calls = peers;
    let mut keys: Vec<&Key> = servers.keys().chain(generators.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let row = Row {
            key: key.clone(),
            servers: servers.get(key).copied().unwrap_or(0),
            generators: generators.get(key).copied().unwrap_or(0),
            peers: 0,
        };
        let ours = routes.contains(&(key.service.clone(), key.method.clone(), key.route.clone()));
        if ours {
            t.rows.push(row);
        } else {
            t.outside.push(row);
        }
    }
    match_peer_calls(&mut t);
    for r in &t.rows {
        let d = r.difference();
        if d != 0 && !(d > 0 && d <= i128::from(unanswered)) {
            t.problems.push(format!(
                "{} {} {} {}: the servers counted {}, the generators sent {}{}",
                r.key.service,
                r.key.method,
                r.key.route,
                r.key.class,
                r.servers,
                r.generators,
                if r.peers > 0 {
                    format!(" and peers called {}", r.peers)
                } else {
                    String::new()
                }
            ));
        }
    }
    Ok(t)
}

/// The callee's GET routes' surplus over the generators, matched to the peer calls into it, class
/// by class; whatever of the peer calls finds no surplus is a problem.
fn match_peer_calls(t: &mut Tally) {
    for ((callee, class), calls) in &t.peer_calls {
        let mut left = *calls;
        for row in t
            .rows
            .iter_mut()
            .filter(|r| &r.key.service == callee && &r.key.class == class && r.key.method == "GET")
        {
            let surplus = u64::try_from(row.difference()).unwrap_or(0);
            let take = surplus.min(left);
            row.peers += take;
            left -= take;
        }
        if left > 0 {
            t.problems.push(format!(
                "{left} of {calls} peer calls into {callee} ({class}) found no GET request the servers counted beyond the generators'"
            ));
        }
    }
}

/// A path template or pattern as a route key: the query left out, every `{…}` made `{}`.
pub fn route_key(path: &str) -> String {
    let path = path.split('?').next().unwrap_or_default();
    let mut out = String::with_capacity(path.len());
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '{' => {
                if depth == 0 {
                    out.push_str("{}");
                }
                depth += 1;
            }
            '}' => depth = (depth - 1).max(0),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

type Counts = BTreeMap<Key, u64>;

/// The generators' requests by key, the unanswered ones, and the (service, method, route) the
/// scenario aims at.
#[allow(clippy::type_complexity)]
fn generator_counts(
    scenario: &Scenario,
    parts: &[LoadResult],
    problems: &mut Vec<String>,
) -> Result<(
    Counts,
    u64,
    std::collections::BTreeSet<(String, String, String)>,
)> {
    let services = scenario.services();
    // Route name -> (service, method, route), from the requests that report under it.
    let mut by_name: BTreeMap<&str, (String, String, String)> = BTreeMap::new();
    for spec in scenario.requests() {
        let target = (
            services[spec.service].clone(),
            spec.method.to_string(),
            route_key(&spec.path.display()),
        );
        let name = scenario.routes()[spec.route].as_str();
        if let Some(seen) = by_name.insert(name, target.clone()) {
            if seen != target {
                bail!("route {name} of the scenario aims at two places ({seen:?} and {target:?}): it cannot be matched to one server route");
            }
        }
    }
    let mut counts = Counts::new();
    let mut unanswered = 0;
    for part in parts {
        if part.settings.scenario != scenario.label() {
            bail!(
                "a result ran {}, not {}",
                part.settings.scenario,
                scenario.label()
            );
        }
        for route in &part.routes {
            let Some((service, method, path)) = by_name.get(route.name.as_str()) else {
                problems.push(format!(
                    "the results' route {} is not the scenario's",
                    route.name
                ));
                continue;
            };
            for (class, n) in route.statuses.iter().chain(&route.warmup_statuses) {
                if class == "none" {
                    unanswered += n;
                    continue;
                }
                let key = Key {
                    service: service.clone(),
                    method: method.clone(),
                    route: path.clone(),
                    class: class.clone(),
                };
                *counts.entry(key).or_default() += n;
            }
        }
    }
    Ok((counts, unanswered, by_name.into_values().collect()))
}

/// The servers' requests by key over the run (after minus before, every pod of every service),
/// and the peer calls by (callee, class).
#[allow(clippy::type_complexity)]
fn server_counts(
    before: &Readings,
    after: &Readings,
    problems: &mut Vec<String>,
) -> Result<(Counts, BTreeMap<(String, String), u64>)> {
    let mut counts = Counts::new();
    let mut peers = BTreeMap::new();
    for (service, pods) in before {
        for pod in pods.keys() {
            if !after.get(service).is_some_and(|p| p.contains_key(pod)) {
                problems.push(format!(
                    "{service} pod {pod} was gone at the second reading: what it counted in between is unknown"
                ));
            }
        }
    }
    for (service, pods) in after {
        for (pod, text) in pods {
            let earlier = before.get(service).and_then(|p| p.get(pod));
            let now = parse_counters(text).with_context(|| format!("{service} pod {pod}"))?;
            let then = earlier
                .map(|t| parse_counters(t))
                .transpose()
                .with_context(|| format!("{service} pod {pod}"))?
                .unwrap_or_default();
            for (labels, n) in &now {
                let was = then.get(labels).copied().unwrap_or(0.0);
                if *n < was {
                    problems.push(format!(
                        "{service} pod {pod}: a counter went down (the process restarted)"
                    ));
                    continue;
                }
                let delta = (n - was).round() as u64;
                if delta == 0 {
                    continue;
                }
                match labels {
                    Counter::Requests {
                        method,
                        route,
                        class,
                    } => {
                        let key = Key {
                            service: service.clone(),
                            method: method.clone(),
                            route: route_key(route),
                            class: class.clone(),
                        };
                        *counts.entry(key).or_default() += delta;
                    }
                    Counter::Peer { peer, class } => {
                        *peers.entry((peer.clone(), class.clone())).or_default() += delta;
                    }
                }
            }
        }
    }
    Ok((counts, peers))
}

/// One counter of the kit's metrics the tally reads.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Counter {
    /// `brigade_http_requests_total{method, route, status}`.
    Requests {
        method: String,
        route: String,
        class: String,
    },
    /// `brigade_peer_requests_total{peer, status}`.
    Peer { peer: String, class: String },
}

/// The request and peer counters of a `/metrics` text.
fn parse_counters(text: &str) -> Result<BTreeMap<Counter, f64>> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let (name, rest) = match line.split_once('{') {
            Some(split) => split,
            None => continue,
        };
        if name != "brigade_http_requests_total" && name != "brigade_peer_requests_total" {
            continue;
        }
        let (labels, value) = rest
            .rsplit_once('}')
            .with_context(|| format!("a metric line without its closing brace: {line}"))?;
        let value: f64 = value
            .trim()
            .parse()
            .with_context(|| format!("a metric line without a value: {line}"))?;
        let labels = parse_labels(labels).with_context(|| format!("in {line}"))?;
        let get = |k: &str| labels.get(k).cloned().unwrap_or_default();
        let counter = if name == "brigade_http_requests_total" {
            Counter::Requests {
                method: get("method"),
                route: get("route"),
                class: get("status"),
            }
        } else {
            Counter::Peer {
                peer: get("peer"),
                class: get("status"),
            }
        };
        out.insert(counter, value);
    }
    Ok(out)
}

/// `a="x",b="y\"z"` as a map (Prometheus text format escapes: `\\`, `\"`, `\n`).
fn parse_labels(text: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let name: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if chars.next() != Some('"') {
            bail!("label {name} has no quoted value");
        }
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(c) => value.push(c),
                    None => bail!("label {name}'s value ends in an escape"),
                },
                Some('"') => break,
                Some(c) => value.push(c),
                None => bail!("label {name}'s value is not closed"),
            }
        }
        out.insert(name.trim().to_string(), value);
    }
}

/// `brigade tally`: what the servers counted around a run against what its generators sent.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Each reading is a directory of SERVICE/POD.prom files, one /metrics text per pod \
(scripts/cluster.sh load writes them). Example:\n  \
brigade tally --before run/metrics-before --after run/metrics-after run/shard-*.json"
)]
pub struct TallyArgs {
    /// Every generator result of the run: each shard's, lost attempts included (not the merged one)
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<std::path::PathBuf>,
    /// The servers' /metrics before the generators started (after the fixtures were made)
    #[arg(long, value_name = "DIR")]
    pub before: std::path::PathBuf,
    /// The servers' /metrics after every generator ended
    #[arg(long, value_name = "DIR")]
    pub after: std::path::PathBuf,
    /// Also write the tally as Markdown to this file
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<std::path::PathBuf>,
}

/// Runs `brigade tally` with the scenarios `registry` knows: prints the tally and fails unless it
/// agrees.
pub fn run(args: &TallyArgs, registry: &brigade_load::Registry) -> Result<()> {
    let mut parts = Vec::new();
    for path in &args.results {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("Failed to read {}", path.display()))?;
        let part: LoadResult = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a brigade load result", path.display()))?;
        parts.push(part);
    }
    let scenario = registry.load(&parts[0].settings.scenario)?;
    let t = tally(
        &scenario,
        &parts,
        &read_readings(&args.before)?,
        &read_readings(&args.after)?,
    )?;
    let text = t.markdown();
    print!("{text}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &text)
            .with_context(|| format!("Failed to write {}", path.display()))?;
    }
    if !t.agrees() {
        bail!("the servers' counters do not agree with the generators");
    }
    Ok(())
}

/// DIR/SERVICE/POD.prom, every one.
fn read_readings(dir: &std::path::Path) -> Result<Readings> {
    let mut out = Readings::new();
    let services =
        std::fs::read_dir(dir).with_context(|| format!("Failed to read {}", dir.display()))?;
    for service in services {
        let service = service?;
        if !service.file_type()?.is_dir() {
            continue;
        }
        let name = service.file_name().to_string_lossy().into_owned();
        for pod in std::fs::read_dir(service.path())? {
            let path = pod?.path();
            if path.extension().is_some_and(|e| e == "prom") {
                let pod = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("Failed to read {}", path.display()))?;
                out.entry(name.clone()).or_default().insert(pod, text);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
