//! The pools of captured values one generator thread works with: bounded queues, picked from (the
//! value stays) or taken from (the value leaves).

use std::collections::VecDeque;

use super::Pools;

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
