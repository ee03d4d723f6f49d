//! Scenarios: what a load run sends, described as data (TOML), never as code.
//!
//! A scenario names the services it talks to, a list of `[[setup]]` steps that create its fixtures
//! before the clock starts, and a list of weighted `[[request]]`s. Paths, headers and bodies are
//! templates (`{{seq}}`, `{{random_int 1 20}}`, `{{pick shifts}}`, `{{take free_tables}}`), and a
//! request can `capture` values from its JSON answer (a JSON pointer such as `/id`) into a named pool
//! that later requests `pick` from (the value stays) or `take` from (the value leaves the pool, so
//! no two requests of one generator thread act on it at once). The syntax is documented in
//! `docs/methodology.md`; the scenarios an application registers by name
//! ([`crate::registry`]) are such files.
//!
//! The parts: the TOML shape and its checks (`compile`), templates (`template`), the pools of
//! captured values (`pools`), a request's life: formed, rendered, judged, captured from
//! (`request`), and a rehearsal without a server ([`Scenario::rehearse`]).

mod compile;
mod pools;
mod rehearse;
mod request;
mod template;

use std::collections::VecDeque;

use http::header::HeaderName;

pub use template::{RenderContext, SeqSpacing, Template};

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

/// The pools of captured values one generator thread works with.
#[derive(Debug, Clone, Default)]
pub struct Pools {
    values: Vec<VecDeque<String>>,
    capacity: usize,
}

impl Scenario {
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
