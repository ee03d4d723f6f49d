//! Scenarios: what a load run sends, described as data (TOML), never as code.
//!
//! A scenario names the services it talks to, a list of `[[setup]]` steps that create its fixtures
//! before the clock starts, and a list of weighted `[[request]]`s. Paths, headers and bodies are
//! templates (`{{seq}}`, `{{random_int 1 20}}`, `{{pick shifts}}`, `{{take free_tables}}`), and a
//! request can `capture` values from its JSON answer (a JSON pointer such as `/id`) into a named pool
//! that later requests `pick` from (the value stays) or `take` from (the value leaves the pool, so
//! no two requests of one generator thread act on it at once). The syntax is documented in
//! `docs/methodology.md`; the built-in scenarios in `loadtests/scenarios/` are such files, compiled
//! into the binary.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use serde::Deserialize;

/// The built-in scenarios: name and TOML text.
const BUILTINS: &[(&str, &str)] = &[
    ("hello", include_str!("../scenarios/hello.toml")),
    ("waiter", include_str!("../scenarios/waiter.toml")),
    ("tables", include_str!("../scenarios/tables.toml")),
    ("kitchen", include_str!("../scenarios/kitchen.toml")),
    ("all", include_str!("../scenarios/all.toml")),
    ("read-heavy", include_str!("../scenarios/read-heavy.toml")),
];

/// Most values a pool keeps per generator thread; past it the oldest are forgotten (constant memory).
pub const DEFAULT_POOL_CAPACITY: usize = 10_000;

/// The service name used by requests when neither they nor the scenario name one.
pub const DEFAULT_SERVICE: &str = "default";

/// A parsed, checked scenario, ready to be run.
#[derive(Debug, Clone)]
pub struct Scenario {
    name: String,
    label: String,
    description: String,
    services: Vec<String>,
    pools: Vec<PoolSpec>,
    routes: Vec<String>,
    setup: Vec<SetupStep>,
    requests: Vec<RequestSpec>,
    cumulative: Vec<u64>,
    pool_capacity: usize,
}

/// A named pool of captured values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSpec {
    /// Its name in templates and captures.
    pub name: String,
    /// Whether some request `take`s from it (then a thread's share is its own, not a copy).
    pub taken: bool,
}

/// One `[[setup]]` entry: a request sent `times` times, one after the other, before the run.
#[derive(Debug, Clone)]
pub struct SetupStep {
    /// The request.
    pub request: RequestSpec,
    /// How many times it is sent.
    pub times: u32,
}

/// One request of a scenario, compiled.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    /// The route name results are reported under (`POST /tables/{id}/seat`).
    pub name: String,
    /// Index of this request's route in [`Scenario::routes`].
    pub route: usize,
    /// Index of its service in [`Scenario::services`].
    pub service: usize,
    /// The HTTP method.
    pub method: http::Method,
    /// Path and query, templated.
    pub path: Template,
    /// Extra headers, templated values.
    pub headers: Vec<(HeaderName, Template)>,
    /// The body, templated; `None` sends no body.
    pub body: Option<Template>,
    /// Statuses that count as success; `None` means any 2xx.
    pub expect: Option<Vec<u16>>,
    /// Values taken from a 2xx JSON answer into pools.
    pub captures: Vec<Capture>,
    /// Relative weight in the mix.
    pub weight: u32,
    /// Values each pool must hold for the request to be formed: (pool, count).
    needs: Vec<(usize, usize)>,
}

/// A capture: a JSON pointer into the answer, and the pool the value goes into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// Index into [`Scenario::pools`].
    pub pool: usize,
    /// JSON pointer (RFC 6901), e.g. `/id` or `/items/0/id`.
    pub pointer: String,
}

/// A template: literal text with `{{function args}}` holes.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Seq,
    RandomInt(i64, i64),
    RandomString(usize),
    OneOf(Vec<String>),
    PickPool(usize),
    TakePool(usize),
}

/// A request ready to go on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedRequest {
    /// The method.
    pub method: http::Method,
    /// Path and query, relative to the service's base URL.
    pub path: String,
    /// Headers from the scenario (the engine adds `host`, `content-type` and `content-length`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body (empty when the request has none).
    pub body: Bytes,
    /// Whether the request has a body.
    pub has_body: bool,
}

/// The pools of captured values one generator thread works with.
#[derive(Debug, Clone, Default)]
pub struct Pools {
    values: Vec<VecDeque<String>>,
    capacity: usize,
}

/// Everything templates draw on while rendering: randomness, pools and the run's sequence.
#[derive(Debug)]
pub struct RenderContext<'a> {
    /// This thread's random numbers.
    pub rng: &'a mut fastrand::Rng,
    /// This thread's pools.
    pub pools: &'a mut Pools,
    /// The run-wide counter behind `{{seq}}` (starts at 1).
    pub seq: &'a AtomicU64,
}

// ---------------------------------------------------------------------------------------------
// The TOML shape.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: String,
    #[serde(default)]
    description: String,
    service: Option<String>,
    pool_capacity: Option<usize>,
    #[serde(default)]
    vars: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    setup: Vec<RawRequest>,
    #[serde(default, rename = "request")]
    requests: Vec<RawRequest>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    name: Option<String>,
    service: Option<String>,
    method: Option<String>,
    path: String,
    body: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    weight: Option<u32>,
    times: Option<u32>,
    expect: Option<Vec<u16>>,
    #[serde(default)]
    capture: BTreeMap<String, String>,
}

impl Scenario {
    /// The names of the built-in scenarios.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTINS.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in scenario by name (`waiter`, `tables`, `kitchen`, `all`, `read-heavy`, `hello`).
    pub fn builtin(name: &str) -> Result<Scenario> {
        let (_, text) = BUILTINS.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            anyhow!(
                "no built-in scenario {name:?}; built-in: {}",
                Scenario::builtin_names().join(", ")
            )
        })?;
        Scenario::parse(text, name).with_context(|| format!("built-in scenario {name}"))
    }

    /// A scenario from a TOML file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Scenario> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("Failed to read scenario {}", path.display()))?;
        Scenario::parse(&text, &path.display().to_string())
            .with_context(|| format!("scenario {}", path.display()))
    }

    /// A built-in scenario if `name_or_path` names one, else a file.
    pub fn load(name_or_path: &str) -> Result<Scenario> {
        if BUILTINS.iter().any(|(n, _)| *n == name_or_path) {
            Scenario::builtin(name_or_path)
        } else if Path::new(name_or_path).exists() {
            Scenario::from_file(name_or_path)
        } else {
            bail!(
                "{name_or_path:?} is neither a built-in scenario ({}) nor a file",
                Scenario::builtin_names().join(", ")
            )
        }
    }

    /// Parses TOML text; `label` is what results call it (the built-in name or the file's path).
    pub fn parse(text: &str, label: &str) -> Result<Scenario> {
        let raw: RawScenario = toml::from_str(text).context("invalid scenario TOML")?;
        Scenario::compile(raw, label)
    }

    fn compile(raw: RawScenario, label: &str) -> Result<Scenario> {
        if raw.requests.is_empty() {
            bail!("a scenario needs at least one [[request]]");
        }
        let default_service = raw
            .service
            .clone()
            .unwrap_or_else(|| DEFAULT_SERVICE.to_string());
        let mut b = Builder {
            vars: &raw.vars,
            services: Vec::new(),
            pools: Vec::new(),
            routes: Vec::new(),
        };

        let mut setup = Vec::new();
        for (i, r) in raw.setup.iter().enumerate() {
            if r.weight.is_some() {
                bail!(
                    "setup step {}: `weight` belongs to [[request]], a setup step has `times`",
                    i + 1
                );
            }
            let request = b
                .request(r, &default_service, false)
                .with_context(|| format!("setup step {}", i + 1))?;
            setup.push(SetupStep {
                request,
                times: r.times.unwrap_or(1),
            });
        }
        let mut requests = Vec::new();
        for (i, r) in raw.requests.iter().enumerate() {
            if r.times.is_some() {
                bail!(
                    "request {}: `times` belongs to [[setup]], a request has `weight`",
                    i + 1
                );
            }
            let spec = b.request(r, &default_service, true).with_context(|| {
                format!(
                    "request {} ({})",
                    i + 1,
                    r.name.clone().unwrap_or_else(|| r.path.clone())
                )
            })?;
            requests.push(spec);
        }

        // Every pool read from must be filled by someone, or the requests reading it could never run.
        let mut filled = vec![false; b.pools.len()];
        for c in setup
            .iter()
            .map(|s| &s.request)
            .chain(&requests)
            .flat_map(|r| &r.captures)
        {
            filled[c.pool] = true;
        }
        for (p, f) in b.pools.iter().zip(&filled) {
            if !f {
                bail!(
                    "pool {:?} is read but no setup step or request captures into it",
                    p.name
                );
            }
        }
        let mut pools = b.pools.clone();
        for r in setup.iter().map(|s| &s.request).chain(&requests) {
            for part in r.all_parts() {
                if let Part::TakePool(p) = part {
                    pools[*p].taken = true;
                }
            }
        }

        let mut cumulative = Vec::with_capacity(requests.len());
        let mut sum = 0u64;
        for r in &requests {
            sum += u64::from(r.weight);
            cumulative.push(sum);
        }
        if sum == 0 {
            bail!("every request has weight 0");
        }
        Ok(Scenario {
            name: raw.name,
            label: label.to_string(),
            description: raw.description,
            services: b.services,
            pools,
            routes: b.routes,
            setup,
            requests,
            cumulative,
            pool_capacity: raw.pool_capacity.unwrap_or(DEFAULT_POOL_CAPACITY).max(1),
        })
    }

    /// The scenario's name (from the file).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The built-in name or the file path it was loaded from.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// A sentence saying what the scenario does.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The service names it talks to (setup included), in first-use order: the targets it needs.
    pub fn services(&self) -> Vec<String> {
        self.services.clone()
    }

    /// The route names results are reported under, in first-use order.
    pub fn routes(&self) -> &[String] {
        &self.routes
    }

    /// The pools.
    pub fn pools(&self) -> &[PoolSpec] {
        &self.pools
    }

    /// The setup steps.
    pub fn setup(&self) -> &[SetupStep] {
        &self.setup
    }

    /// The weighted requests.
    pub fn requests(&self) -> &[RequestSpec] {
        &self.requests
    }

    /// The share of the mix (by weight) whose method is not GET or HEAD.
    pub fn write_share(&self) -> f64 {
        let total: u64 = self.requests.iter().map(|r| u64::from(r.weight)).sum();
        let writes: u64 = self
            .requests
            .iter()
            .filter(|r| r.method != http::Method::GET && r.method != http::Method::HEAD)
            .map(|r| u64::from(r.weight))
            .sum();
        writes as f64 / total as f64
    }

    /// Empty pools sized for this scenario.
    pub fn empty_pools(&self) -> Pools {
        Pools {
            values: vec![VecDeque::new(); self.pools.len()],
            capacity: self.pool_capacity,
        }
    }

    /// Splits the pools filled by setup between `threads` generator threads: a pool some request
    /// `take`s from is dealt out (each value to one thread, so two threads never act on the same
    /// fixture), any other pool is copied whole to every thread.
    pub fn share_pools(&self, filled: &Pools, threads: usize) -> Vec<Pools> {
        let threads = threads.max(1);
        let mut out = vec![self.empty_pools(); threads];
        for (i, spec) in self.pools.iter().enumerate() {
            for (j, v) in filled.values[i].iter().enumerate() {
                if spec.taken {
                    out[j % threads].values[i].push_back(v.clone());
                } else {
                    for p in &mut out {
                        p.values[i].push_back(v.clone());
                    }
                }
            }
        }
        out
    }

    /// Draws the next request by weight among those the pools allow; `None` if none can be formed.
    pub fn choose(&self, rng: &mut fastrand::Rng, pools: &Pools) -> Option<usize> {
        let total = *self.cumulative.last().expect("at least one request");
        for _ in 0..8 {
            let x = rng.u64(0..total);
            let i = self.cumulative.partition_point(|&c| c <= x);
            if self.requests[i].formable(pools) {
                return Some(i);
            }
        }
        // The mix is starved of some pool: draw among the requests that can be formed now.
        let formable: Vec<usize> = (0..self.requests.len())
            .filter(|&i| self.requests[i].weight > 0 && self.requests[i].formable(pools))
            .collect();
        let sum: u64 = formable
            .iter()
            .map(|&i| u64::from(self.requests[i].weight))
            .sum();
        if sum == 0 {
            return None;
        }
        let mut x = rng.u64(0..sum);
        for i in formable {
            let w = u64::from(self.requests[i].weight);
            if x < w {
                return Some(i);
            }
            x -= w;
        }
        None
    }
}

struct Builder<'a> {
    vars: &'a BTreeMap<String, Vec<String>>,
    services: Vec<String>,
    pools: Vec<PoolSpec>,
    routes: Vec<String>,
}

impl Builder<'_> {
    fn service(&mut self, name: &str) -> usize {
        index_of(&mut self.services, name, |s| s.clone())
    }

    fn pool(&mut self, name: &str) -> usize {
        if let Some(i) = self.pools.iter().position(|p| p.name == name) {
            return i;
        }
        self.pools.push(PoolSpec {
            name: name.to_string(),
            taken: false,
        });
        self.pools.len() - 1
    }

    fn request(
        &mut self,
        r: &RawRequest,
        default_service: &str,
        weighted: bool,
    ) -> Result<RequestSpec> {
        let method_name = r
            .method
            .clone()
            .unwrap_or_else(|| "GET".into())
            .to_ascii_uppercase();
        let method = http::Method::from_bytes(method_name.as_bytes())
            .map_err(|_| anyhow!("bad method {method_name:?}"))?;
        if !r.path.starts_with('/') {
            bail!("path {:?} must start with /", r.path);
        }
        let service = self.service(r.service.as_deref().unwrap_or(default_service));
        let path = self.template(&r.path).context("path")?;
        let body = r
            .body
            .as_deref()
            .map(|b| self.template(b))
            .transpose()
            .context("body")?;
        let mut headers = Vec::new();
        for (k, v) in &r.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| anyhow!("bad header name {k:?}"))?;
            headers.push((
                name,
                self.template(v).with_context(|| format!("header {k}"))?,
            ));
        }
        let mut captures = Vec::new();
        for (pool, pointer) in &r.capture {
            if self.vars.contains_key(pool) {
                bail!("capture into {pool:?}, which is a [vars] list, not a pool");
            }
            if !pointer.is_empty() && !pointer.starts_with('/') {
                bail!("capture {pool}: {pointer:?} is not a JSON pointer (they start with /)");
            }
            captures.push(Capture {
                pool: self.pool(pool),
                pointer: pointer.clone(),
            });
        }
        if let Some(expect) = &r.expect {
            if expect.is_empty() || expect.iter().any(|s| !(100..=599).contains(s)) {
                bail!("expect must list HTTP statuses (100..=599), got {expect:?}");
            }
        }
        let name = r
            .name
            .clone()
            .unwrap_or_else(|| format!("{method} {}", path.display()));
        let route = if weighted {
            index_of(&mut self.routes, &name, |s| s.clone())
        } else {
            usize::MAX
        };
        let mut spec = RequestSpec {
            name,
            route,
            service,
            method,
            path,
            headers,
            body,
            expect: r.expect.clone(),
            captures,
            weight: r.weight.unwrap_or(1),
            needs: Vec::new(),
        };
        let mut needs: BTreeMap<usize, (usize, bool)> = BTreeMap::new();
        for part in spec.all_parts() {
            match part {
                Part::TakePool(p) => needs.entry(*p).or_default().0 += 1,
                Part::PickPool(p) => needs.entry(*p).or_default().1 = true,
                _ => {}
            }
        }
        spec.needs = needs
            .into_iter()
            .map(|(p, (takes, picks))| (p, takes + usize::from(picks)))
            .collect();
        Ok(spec)
    }

    fn template(&mut self, text: &str) -> Result<Template> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                parts.push(Part::Text(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let end = after
                .find("}}")
                .ok_or_else(|| anyhow!("unclosed {{{{ in {text:?}"))?;
            parts.push(self.function(after[..end].trim())?);
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    fn function(&mut self, call: &str) -> Result<Part> {
        let words: Vec<&str> = call.split_whitespace().collect();
        let arity = |n: usize| -> Result<()> {
            if words.len() == n + 1 {
                Ok(())
            } else {
                bail!("{{{{{call}}}}}: {} takes {n} argument(s)", words[0])
            }
        };
        match words.first().copied() {
            None => bail!("empty {{{{}}}}"),
            Some("seq") => {
                arity(0)?;
                Ok(Part::Seq)
            }
            Some("random_int") => {
                arity(2)?;
                let lo: i64 = words[1].parse().with_context(|| format!("{{{{{call}}}}}: not an integer"))?;
                let hi: i64 = words[2].parse().with_context(|| format!("{{{{{call}}}}}: not an integer"))?;
                if lo > hi {
                    bail!("{{{{{call}}}}}: the lower bound is above the upper one");
                }
                Ok(Part::RandomInt(lo, hi))
            }
            Some("random_string") => {
                arity(1)?;
                let n: usize = words[1].parse().with_context(|| format!("{{{{{call}}}}}: not a length"))?;
                Ok(Part::RandomString(n))
            }
            Some("one_of") => {
                if words.len() < 2 {
                    bail!("{{{{{call}}}}}: one_of needs at least one value");
                }
                Ok(Part::OneOf(words[1..].iter().map(|s| s.to_string()).collect()))
            }
            Some("pick") => {
                arity(1)?;
                match self.vars.get(words[1]) {
                    Some(list) if list.is_empty() => bail!("[vars] {} is empty", words[1]),
                    Some(list) => Ok(Part::OneOf(list.clone())),
                    None => Ok(Part::PickPool(self.pool(words[1]))),
                }
            }
            Some("take") => {
                arity(1)?;
                if self.vars.contains_key(words[1]) {
                    bail!("{{{{{call}}}}}: {} is a [vars] list; `take` is for pools, use `pick`", words[1]);
                }
                Ok(Part::TakePool(self.pool(words[1])))
            }
            Some(other) => bail!(
                "{{{{{call}}}}}: unknown function {other:?} (known: seq, random_int, random_string, one_of, pick, take)"
            ),
        }
    }
}

fn index_of(list: &mut Vec<String>, name: &str, make: impl Fn(&String) -> String) -> usize {
    if let Some(i) = list.iter().position(|s| s == name) {
        return i;
    }
    list.push(make(&name.to_string()));
    list.len() - 1
}

impl Template {
    /// A template with no holes.
    pub fn literal(text: &str) -> Template {
        Template {
            parts: vec![Part::Text(text.to_string())],
        }
    }

    /// The template with every hole shown as `{name}`: `/tables/{free_tables}/seat`.
    pub fn display(&self) -> String {
        self.display_with(&[])
    }

    fn display_with(&self, pools: &[PoolSpec]) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::PickPool(i) | Part::TakePool(i) => match pools.get(*i) {
                    Some(spec) => out.push_str(&format!("{{{}}}", spec.name)),
                    None => out.push_str("{id}"),
                },
                Part::Seq => out.push_str("{seq}"),
                Part::RandomInt(..) => out.push_str("{n}"),
                Part::RandomString(_) | Part::OneOf(_) => out.push_str("{s}"),
            }
        }
        out
    }

    /// Fills the holes. The caller has checked the pools hold enough values (see
    /// [`RequestSpec::formable`]); a missing value renders as an empty string.
    pub fn render(&self, ctx: &mut RenderContext<'_>, out: &mut String) {
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Seq => {
                    out.push_str(&(ctx.seq.fetch_add(1, Ordering::Relaxed) + 1).to_string())
                }
                Part::RandomInt(lo, hi) => out.push_str(&ctx.rng.i64(*lo..=*hi).to_string()),
                Part::RandomString(n) => {
                    for _ in 0..*n {
                        out.push(ctx.rng.alphanumeric());
                    }
                }
                Part::OneOf(list) => out.push_str(&list[ctx.rng.usize(0..list.len())]),
                Part::PickPool(i) => {
                    if let Some(v) = ctx.pools.pick(*i, ctx.rng) {
                        out.push_str(v);
                    }
                }
                Part::TakePool(i) => {
                    if let Some(v) = ctx.pools.take(*i, ctx.rng) {
                        out.push_str(&v);
                    }
                }
            }
        }
    }
}

impl RequestSpec {
    fn all_parts(&self) -> impl Iterator<Item = &Part> {
        self.path
            .parts
            .iter()
            .chain(self.headers.iter().flat_map(|(_, t)| t.parts.iter()))
            .chain(self.body.iter().flat_map(|t| t.parts.iter()))
    }

    /// Whether the pools hold what this request's templates `pick` and `take`.
    pub fn formable(&self, pools: &Pools) -> bool {
        self.needs.iter().all(|&(p, n)| pools.len(p) >= n)
    }

    /// Whether `status` is a success for this request.
    pub fn expects(&self, status: u16) -> bool {
        match &self.expect {
            Some(list) => list.contains(&status),
            None => (200..300).contains(&status),
        }
    }

    /// Whether the answer's body must be read to capture values.
    pub fn captures_anything(&self) -> bool {
        !self.captures.is_empty()
    }

    /// Renders the request with `ctx`.
    pub fn render(&self, ctx: &mut RenderContext<'_>) -> Result<RenderedRequest> {
        let mut path = String::with_capacity(64);
        self.path.render(ctx, &mut path);
        let mut headers = Vec::with_capacity(self.headers.len());
        for (name, t) in &self.headers {
            let mut v = String::new();
            t.render(ctx, &mut v);
            headers.push((
                name.clone(),
                HeaderValue::from_str(&v).with_context(|| format!("header {name}: {v:?}"))?,
            ));
        }
        let (body, has_body) = match &self.body {
            Some(t) => {
                let mut b = String::with_capacity(128);
                t.render(ctx, &mut b);
                (Bytes::from(b), true)
            }
            None => (Bytes::new(), false),
        };
        Ok(RenderedRequest {
            method: self.method.clone(),
            path,
            headers,
            body,
            has_body,
        })
    }

    /// Stores the values this request captures from a successful JSON `body`.
    pub fn capture(&self, body: &[u8], pools: &mut Pools) -> Result<()> {
        if self.captures.is_empty() {
            return Ok(());
        }
        let doc: serde_json::Value =
            serde_json::from_slice(body).context("the answer is not JSON")?;
        for c in &self.captures {
            let v = doc
                .pointer(&c.pointer)
                .ok_or_else(|| anyhow!("nothing at {} in the answer", c.pointer))?;
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => b.to_string(),
                other => bail!("{} is not a string or number: {other}", c.pointer),
            };
            pools.push(c.pool, text);
        }
        Ok(())
    }
}

impl Pools {
    /// How many values pool `i` holds.
    pub fn len(&self, i: usize) -> usize {
        self.values.get(i).map_or(0, VecDeque::len)
    }

    /// Whether every pool is empty.
    pub fn is_empty(&self) -> bool {
        self.values.iter().all(VecDeque::is_empty)
    }

    /// Adds a value, forgetting the oldest when the pool is full.
    pub fn push(&mut self, i: usize, value: String) {
        let q = &mut self.values[i];
        if q.len() >= self.capacity {
            q.pop_front();
        }
        q.push_back(value);
    }

    /// A random value of pool `i`, left in place.
    pub fn pick(&self, i: usize, rng: &mut fastrand::Rng) -> Option<&str> {
        let q = &self.values[i];
        if q.is_empty() {
            return None;
        }
        q.get(rng.usize(0..q.len())).map(String::as_str)
    }

    /// A random value of pool `i`, removed from it.
    pub fn take(&mut self, i: usize, rng: &mut fastrand::Rng) -> Option<String> {
        let q = &mut self.values[i];
        if q.is_empty() {
            return None;
        }
        let at = rng.usize(0..q.len());
        q.swap_remove_back(at)
    }

    /// The values of pool `i`, oldest first.
    pub fn values(&self, i: usize) -> impl Iterator<Item = &str> {
        self.values[i].iter().map(String::as_str)
    }
}

impl SetupStep {
    /// A short description for error messages: `POST /waiters (waiter)`.
    pub fn describe(&self, scenario: &Scenario) -> String {
        format!(
            "{} {} ({})",
            self.request.method,
            self.request.path.display_with(&scenario.pools),
            scenario.services[self.request.service]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_and_names_its_services() {
        for name in Scenario::builtin_names() {
            let s = Scenario::builtin(name).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(s.name(), name);
            assert!(!s.services().is_empty());
        }
        assert_eq!(
            Scenario::builtin("hello").unwrap().services(),
            vec!["waiter".to_string()]
        );
    }

    #[test]
    fn read_heavy_writes_at_most_a_tenth() {
        let s = Scenario::builtin("read-heavy").unwrap();
        assert!(s.write_share() <= 0.10, "{}", s.write_share());
        assert!(s.write_share() > 0.0);
    }
}
