//! The TOML shape of a scenario and its compilation: every name resolved to an index, every
//! template parsed, every mistake an author can make refused with the reason.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use http::header::HeaderName;
use serde::Deserialize;

use super::template::{Part, Template};
use super::{
    Capture, PoolSpec, RequestSpec, Scenario, SetupStep, DEFAULT_POOL_CAPACITY, DEFAULT_SERVICE,
};

/// A scenario file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
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

// `parse` and `from_file` are here, beside the TOML shape they read, so `mod.rs` (the types) never
// imports this file back.
impl Scenario {
    /// A scenario from a TOML file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Scenario> {
        let path = path.as_ref();
        let text = brigade_records::files::read_text(
            path,
            brigade_records::files::MAX_INPUT_BYTES,
            "scenario",
        )?;
        Scenario::parse(&text, &path.display().to_string())
            .with_context(|| format!("scenario {}", path.display()))
    }

    /// Parses TOML text; `label` is what results call it (the built-in name or the file's path).
    pub fn parse(text: &str, label: &str) -> Result<Scenario> {
        let raw: RawScenario = toml::from_str(text).context("invalid scenario TOML")?;
        Scenario::compile(raw, label)
    }

    pub(super) fn compile(raw: RawScenario, label: &str) -> Result<Scenario> {
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

        let setup = b.setup_steps(&raw.setup, &default_service)?;
        let requests = b.requests(&raw.requests, &default_service)?;

        let pools = checked_pools(&b.pools, &setup, &requests)?;
        let cumulative = cumulative_weights(&requests)?;
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
}

/// The pools, each checked to be filled by some capture (or the requests reading it could never
/// run) and marked `taken` when some request takes from it.
fn checked_pools(
    pools: &[PoolSpec],
    setup: &[SetupStep],
    requests: &[RequestSpec],
) -> Result<Vec<PoolSpec>> {
    // Every pool read from must be filled by someone, or the requests reading it could never run.
    let mut filled = vec![false; pools.len()];
    for c in setup
        .iter()
        .map(|s| &s.request)
        .chain(requests)
        .flat_map(|r| &r.captures)
    {
        filled[c.pool] = true;
    }
    for (p, f) in pools.iter().zip(&filled) {
        if !f {
            bail!(
                "pool {:?} is read but no setup step or request captures into it",
                p.name
            );
        }
    }
    let mut pools = pools.to_vec();
    for r in setup.iter().map(|s| &s.request).chain(requests) {
        for part in r.all_parts() {
            if let Part::TakePool(p) = part {
                pools[*p].taken = true;
            }
        }
    }
    Ok(pools)
}

/// The requests' cumulative weights, for drawing the mix; refused when they are all 0.
fn cumulative_weights(requests: &[RequestSpec]) -> Result<Vec<u64>> {
    let mut cumulative = Vec::with_capacity(requests.len());
    let mut sum = 0u64;
    for r in requests {
        sum += u64::from(r.weight);
        cumulative.push(sum);
    }
    if sum == 0 {
        bail!("every request has weight 0");
    }
    Ok(cumulative)
}

/// The values each pool must hold for a request to be formed: one per take, plus one when it
/// picks from the pool.
fn pool_needs(spec: &RequestSpec) -> Vec<(usize, usize)> {
    let mut needs: BTreeMap<usize, (usize, bool)> = BTreeMap::new();
    for part in spec.all_parts() {
        match part {
            Part::TakePool(p) => needs.entry(*p).or_default().0 += 1,
            Part::PickPool(p) => needs.entry(*p).or_default().1 = true,
            _ => {}
        }
    }
    needs
        .into_iter()
        .map(|(p, (takes, picks))| (p, takes + usize::from(picks)))
        .collect()
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

    /// The `[[setup]]` steps, compiled (a step has `times`, not `weight`).
    fn setup_steps(&mut self, raw: &[RawRequest], default_service: &str) -> Result<Vec<SetupStep>> {
        let mut setup = Vec::new();
        for (i, r) in raw.iter().enumerate() {
            if r.weight.is_some() {
                bail!(
                    "setup step {}: `weight` belongs to [[request]], a setup step has `times`",
                    i + 1
                );
            }
            let request = self
                .request(r, default_service, false)
                .with_context(|| format!("setup step {}", i + 1))?;
            setup.push(SetupStep {
                request,
                times: r.times.unwrap_or(1),
            });
        }
        Ok(setup)
    }

    /// The `[[request]]`s, compiled (a request has `weight`, not `times`).
    fn requests(&mut self, raw: &[RawRequest], default_service: &str) -> Result<Vec<RequestSpec>> {
        let mut requests = Vec::new();
        for (i, r) in raw.iter().enumerate() {
            if r.times.is_some() {
                bail!(
                    "request {}: `times` belongs to [[setup]], a request has `weight`",
                    i + 1
                );
            }
            let spec = self.request(r, default_service, true).with_context(|| {
                format!(
                    "request {} ({})",
                    i + 1,
                    r.name.clone().unwrap_or_else(|| r.path.clone())
                )
            })?;
            requests.push(spec);
        }
        Ok(requests)
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
        let headers = self.headers(&r.headers)?;
        let captures = self.captures(&r.capture)?;
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
        spec.needs = pool_needs(&spec);
        Ok(spec)
    }

    /// A request's headers: each name checked, each value a template.
    fn headers(&mut self, raw: &BTreeMap<String, String>) -> Result<Vec<(HeaderName, Template)>> {
        let mut headers = Vec::new();
        for (k, v) in raw {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| anyhow!("bad header name {k:?}"))?;
            headers.push((
                name,
                self.template(v).with_context(|| format!("header {k}"))?,
            ));
        }
        Ok(headers)
    }

    /// A request's captures, pool name → JSON pointer: into pools, never into a `[vars]` list.
    fn captures(&mut self, raw: &BTreeMap<String, String>) -> Result<Vec<Capture>> {
        let mut captures = Vec::new();
        for (pool, pointer) in raw {
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
        Ok(captures)
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
            Some("filler") => {
                arity(1)?;
                let n: usize = words[1].parse().with_context(|| format!("{{{{{call}}}}}: not a length"))?;
                if n > MAX_FILLER {
                    bail!("{{{{{call}}}}}: at most {MAX_FILLER} bytes");
                }
                Ok(Part::Text(filler(n)))
            }
            Some("json_strings") => {
                arity(2)?;
                let count: usize = words[1].parse().with_context(|| format!("{{{{{call}}}}}: not a count"))?;
                let len: usize = words[2].parse().with_context(|| format!("{{{{{call}}}}}: not a length"))?;
                if count.saturating_mul(len + 3) > MAX_FILLER {
                    bail!("{{{{{call}}}}}: at most {MAX_FILLER} bytes");
                }
                Ok(Part::Text(json_strings(count, len)))
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
                "{{{{{call}}}}}: unknown function {other:?} (known: seq, random_int, random_string, one_of, pick, take, filler, json_strings)"
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

/// Largest body `filler` and `json_strings` make: the bench endpoints' body limit.
const MAX_FILLER: usize = 16 * 1024 * 1024;

/// What `filler` and `json_strings` cycle through.
const FILL: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// `{{filler N}}`: N bytes of printable text, the same every time (fixed when the scenario is
/// compiled, so the request is encoded once).
fn filler(n: usize) -> String {
    FILL.iter()
        .cycle()
        .take(n)
        .map(|&b| char::from(b))
        .collect()
}

/// `{{json_strings COUNT LEN}}`: a JSON array of COUNT strings of LEN characters each, string `i`
/// starting at `i` in the cycle (so neighbours differ), fixed when the scenario is compiled.
fn json_strings(count: usize, len: usize) -> String {
    let mut out = String::with_capacity(2 + count * (len + 3));
    out.push('[');
    for i in 0..count {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        out.extend((0..len).map(|j| char::from(FILL[(i + j) % FILL.len()])));
        out.push('"');
    }
    out.push(']');
    out
}
