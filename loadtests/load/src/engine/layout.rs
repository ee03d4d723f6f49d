//! How a run (or this shard of it) is laid out: the loop, its users or paced connections, this
//! shard's share of them and of the request budget, the threads that carry them and their CPUs.

use anyhow::{bail, Result};

use super::worker::{Pace, Share};
use super::{usable_cpus, LoadConfig};
use crate::scenario::Scenario;
use brigade_records::shard::Shard;

use crate::shard::ShardPlan;

/// How one run (or this shard of it) is laid out: the loop, its users or paced connections,
/// this shard's share of them and of the request budget, and the threads that carry them.
pub(super) struct Layout {
    /// Open loop: the run's rate; `None` for a closed loop.
    pub(super) open: Option<f64>,
    /// The whole run's users (closed loop) or paced connections (open loop).
    pub(super) tasks: u32,
    /// This shard's users (a block of the run's numbers) or paced connections (every count-th of
    /// the run's, each keeping its place in the run's schedule).
    pub(super) mine: Vec<u32>,
    /// This shard's part of the request budget.
    pub(super) requests: Option<u64>,
    /// Generator threads, at most one per task of this shard.
    pub(super) threads: usize,
    /// The CPUs to pin the threads to, when given.
    pub(super) cpus: Option<Vec<usize>>,
    /// The shard this generator runs (the whole run unless `--shard`).
    pub(super) shard: Shard,
}

impl Layout {
    /// The layout `config` and `plan` ask for, or why there is none.
    pub(super) fn new(
        config: &LoadConfig,
        scenario: &Scenario,
        plan: &ShardPlan,
    ) -> Result<Layout> {
        let open = match config.rate {
            Some(r) if !(r.is_finite() && r > 0.0) => {
                bail!("the rate must be a positive number of requests per second")
            }
            Some(r) => Some(r),
            None => None,
        };
        let tasks = match open {
            Some(_) => config.connections,
            None => config.users.unwrap_or(config.connections),
        };
        if tasks == 0 {
            bail!("at least one user (closed loop) or connection (open loop) is needed");
        }
        let shard = plan.shard;
        let mine: Vec<u32> = match open {
            None => {
                let (first, len) = shard.block(u64::from(tasks));
                (first as u32..(first + len) as u32).collect()
            }
            Some(_) => (0..tasks).filter(|&c| shard.owns(u64::from(c))).collect(),
        };
        if mine.is_empty() {
            bail!(
                "shard {shard} has nothing to run: the run has {tasks} user(s)/connection(s), fewer than its {} shards",
                shard.count
            );
        }
        let requests = config.requests.map(|n| shard.block(n).1);
        if requests == Some(0) {
            bail!(
                "shard {shard} has no request to send: --requests is smaller than the shard count"
            );
        }
        if !shard.is_whole() && plan.fixtures.is_none() && !scenario.setup().is_empty() {
            bail!(
                "scenario {} makes fixtures: make them once with `--setup-only --fixtures FILE` and give every shard `--fixtures FILE`",
                scenario.name()
            );
        }
        let cpus = config.cpus.clone().filter(|c| !c.is_empty());
        let wanted_threads = match (config.threads, &cpus) {
            (0, Some(c)) => c.len(),
            (0, None) => usable_cpus(),
            (n, _) => n as usize,
        };
        let threads = wanted_threads.clamp(1, mine.len());
        Ok(Layout {
            open,
            tasks,
            mine,
            requests,
            threads,
            cpus,
            shard,
        })
    }

    /// This shard's users or paced connections.
    pub(super) fn my_tasks(&self) -> u32 {
        self.mine.len() as u32
    }

    /// Deals the users / paced connections out to the threads, one [`Share`] each.
    pub(super) fn shares(&self, streams: u32) -> Vec<Share> {
        let (threads, my_tasks) = (self.threads, self.my_tasks());
        match self.open {
            None => {
                let mut first = self.mine[0];
                (0..threads as u32)
                    .map(|t| {
                        let users =
                            my_tasks / threads as u32 + u32::from(t < my_tasks % threads as u32);
                        first += users;
                        Share::Closed {
                            users,
                            first: first - users,
                        }
                    })
                    .collect()
            }
            Some(rate) => {
                // Connection `c`'s streams are the schedule's slots `c * streams ..`: sends spread
                // evenly over connections × streams paced senders.
                let mut v: Vec<Vec<Vec<Pace>>> = vec![Vec::new(); threads];
                let slots = u64::from(self.tasks) * u64::from(streams);
                for (i, &c) in self.mine.iter().enumerate() {
                    v[i % threads].push(
                        (0..u64::from(streams))
                            .map(|s| Pace {
                                first: u64::from(c) * u64::from(streams) + s,
                                stride: slots,
                                rate,
                            })
                            .collect(),
                    );
                }
                v.into_iter()
                    .map(|connections| Share::Open { connections })
                    .collect()
            }
        }
    }
}
