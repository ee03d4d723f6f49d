//! A rehearsal: a scenario played without a server, to catch an author's mistakes before a run —
//! a setup step that reads a pool no earlier step filled (the fixtures would starve), a request
//! that can never be formed, a body that renders to invalid JSON.

use std::sync::atomic::AtomicU64;

use anyhow::{bail, Context, Result};

use super::{RenderContext, Scenario};

impl Scenario {
    /// Plays the setup steps in order, each captured value replaced by a made-up id, then renders
    /// every request of the mix once; fails on the first step that cannot be formed, on a request
    /// no setup makes formable when nothing in the mix could fill its pools either, and on a body
    /// that claims JSON (starts with `{` or `[`) but does not parse. Returns the requests rendered.
    pub fn rehearse(&self) -> Result<usize> {
        let mut pools = self.empty_pools();
        let mut rng = fastrand::Rng::with_seed(7);
        let seq = AtomicU64::new(0);
        let mut made = 0u64;
        for (i, step) in self.setup().iter().enumerate() {
            for _ in 0..step.times {
                if !step.request.formable(&pools) {
                    bail!(
                        "setup step {} ({}) reads a pool no earlier step filled",
                        i + 1,
                        step.describe(self)
                    );
                }
                let out = step.request.render(&mut RenderContext {
                    rng: &mut rng,
                    pools: &mut pools,
                    seq: &seq,
                    spacing: Default::default(),
                })?;
                check_json(&out.body).with_context(|| format!("setup step {}", i + 1))?;
                for c in &step.request.captures {
                    made += 1;
                    pools.push(c.pool, format!("rehearsal-{made}"));
                }
            }
        }
        // Values the mix itself captures, so requests reading them can be formed too.
        for r in self.requests() {
            for c in &r.captures {
                made += 1;
                pools.push(c.pool, format!("rehearsal-{made}"));
            }
        }
        let mut rendered = 0;
        for r in self.requests() {
            if !r.formable(&pools) {
                bail!(
                    "request {} can never be formed: no setup step or request fills what it reads",
                    r.name
                );
            }
            let out = r.render(&mut RenderContext {
                rng: &mut rng,
                pools: &mut pools,
                seq: &seq,
                spacing: Default::default(),
            })?;
            check_json(&out.body).with_context(|| format!("request {}", r.name))?;
            rendered += 1;
        }
        Ok(rendered)
    }
}

/// Fails when a body that looks like JSON does not parse.
fn check_json(body: &[u8]) -> Result<()> {
    let looks_json = matches!(
        body.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{' | b'[')
    );
    if looks_json {
        serde_json::from_slice::<serde_json::Value>(body).context("renders invalid JSON")?;
    }
    Ok(())
}
