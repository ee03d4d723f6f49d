//! A request's life: whether the pools allow forming it, rendering it onto the wire, judging its
//! status, and capturing values from its answer.

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http::header::HeaderValue;

use super::template::{Part, RenderContext};
use brigade_clients::Request;

use super::{Pools, RequestSpec, Scenario, SetupStep};

impl RequestSpec {
    pub(super) fn all_parts(&self) -> impl Iterator<Item = &Part> {
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

    /// The request as it is every time, when its templates have no holes (then it can be encoded
    /// once for a whole run).
    pub fn literal(&self) -> Option<Request> {
        if !self.all_parts().all(|p| matches!(p, Part::Text(_))) {
            return None;
        }
        let seq = std::sync::atomic::AtomicU64::new(0);
        self.render(&mut RenderContext {
            rng: &mut fastrand::Rng::with_seed(0),
            pools: &mut Pools::default(),
            seq: &seq,
            spacing: Default::default(),
        })
        .ok()
    }

    /// Renders the request with `ctx`.
    pub fn render(&self, ctx: &mut RenderContext<'_>) -> Result<Request> {
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
        Ok(Request {
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

impl SetupStep {
    /// A short description for error messages: `POST /things (api)`.
    pub fn describe(&self, scenario: &Scenario) -> String {
        format!(
            "{} {} ({})",
            self.request.method,
            self.request.path.display_with(&scenario.pools),
            scenario.services[self.request.service]
        )
    }
}
