//! Which share of a run one generator process makes: shard `I/N` of the run's users, requests and
//! fixtures. The record every sharded result carries; how a shard splits a scenario lives with the
//! generator (`brigade_load::shard`).

use serde::{Deserialize, Serialize};

/// Which share of a run this generator makes: shard `index` of `count` (`0/1` is the whole run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: u32,
    /// How many shards make the run.
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not a shard: write I/N, e.g. 0/3"))?;
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|e| format!("shard index {i:?}: {e}"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|e| format!("shard count {n:?}: {e}"))?;
        if count == 0 || index >= count {
            return Err(format!(
                "shard {text}: the index runs from 0 to the count less one"
            ));
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether this is the whole run (`0/1`).
    pub fn is_whole(&self) -> bool {
        self.count <= 1
    }

    /// This shard's contiguous block of `total` things numbered `0..total`: (first, how many).
    /// The first `total % count` shards get one more.
    pub fn block(&self, total: u64) -> (u64, u64) {
        let (i, n) = (u64::from(self.index), u64::from(self.count.max(1)));
        let base = total / n;
        let extra = total % n;
        let len = base + u64::from(i < extra);
        let first = i * base + i.min(extra);
        (first, len)
    }

    /// Whether thing number `k` of a dealt-out set (`k % count == index`) is this shard's.
    pub fn owns(&self, k: u64) -> bool {
        k % u64::from(self.count.max(1)) == u64::from(self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_split_blocks_without_gaps_or_overlap() {
        let s: Shard = "1/3".parse().unwrap();
        assert_eq!(s, Shard { index: 1, count: 3 });
        assert!("3/3".parse::<Shard>().is_err());
        assert!("0/0".parse::<Shard>().is_err());
        assert!("1".parse::<Shard>().is_err());
        let mut next = 0;
        let mut sizes = Vec::new();
        for i in 0..3 {
            let (first, len) = Shard { index: i, count: 3 }.block(10);
            assert_eq!(first, next, "blocks follow one another");
            next += len;
            sizes.push(len);
        }
        assert_eq!(next, 10);
        assert_eq!(sizes, vec![4, 3, 3]);
    }
}
