//! What the storage study does, decided before it runs: the counts (the original study's, `--scale`d
//! or `--quick`), the seeded sequence of documents the growing phase reads and grows (the same for
//! every store, so every store does exactly the same work), and the document-size bands its results
//! are grouped by.

use serde::{Deserialize, Serialize};

/// How much the study does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Growing phase: documents created before the growth.
    pub growing_docs: u64,
    /// Growing phase: each document's initial size, and what each growth adds, bytes.
    pub unit_bytes: u64,
    /// Growing phase: read-and-grow operations.
    pub growth_ops: u64,
    /// Growing phase: operations per reported group.
    pub group_ops: u64,
    /// Fixed phase: documents created.
    pub fixed_docs: u64,
    /// Fixed phase: each document's size, bytes.
    pub fixed_bytes: u64,
    /// Fixed phase: random reads.
    pub fixed_reads: u64,
    /// Fixed phase: random read + same-size rewrite pairs.
    pub fixed_rewrites: u64,
}

impl Counts {
    /// The original study's counts: 5,000 documents of 1 KB grown 100,000 times by 1 KB, reported
    /// per 10,000 operations; 20,000 documents of 10 KB read 40,000 times, then read and rewritten
    /// 40,000 times.
    pub const DEFAULT: Counts = Counts {
        growing_docs: 5_000,
        unit_bytes: 1024,
        growth_ops: 100_000,
        group_ops: 10_000,
        fixed_docs: 20_000,
        fixed_bytes: 10 * 1024,
        fixed_reads: 40_000,
        fixed_rewrites: 40_000,
    };

    /// `--quick`: the same shape, small enough for CI (under 1,000 durable writes per store).
    pub const QUICK: Counts = Counts {
        growing_docs: 50,
        unit_bytes: 1024,
        growth_ops: 500,
        group_ops: 50,
        fixed_docs: 100,
        fixed_bytes: 10 * 1024,
        fixed_reads: 200,
        fixed_rewrites: 200,
    };

    /// These counts with every document and operation count multiplied by `k` (at least 1 each);
    /// sizes and the group length stay as they are.
    pub fn scaled(self, k: f64) -> Counts {
        let times = |n: u64| ((n as f64 * k).round() as u64).max(1);
        Counts {
            growing_docs: times(self.growing_docs),
            growth_ops: times(self.growth_ops),
            fixed_docs: times(self.fixed_docs),
            fixed_reads: times(self.fixed_reads),
            fixed_rewrites: times(self.fixed_rewrites),
            ..self
        }
    }

    /// How many groups the growth is reported in.
    pub fn groups(&self) -> u64 {
        self.growth_ops.div_ceil(self.group_ops.max(1))
    }
}

/// The seed every store's sequence of documents is drawn from unless told otherwise.
pub(crate) const DEFAULT_SEED: u64 = 7_340_033;

/// The documents the growing phase reads and grows, in order: the same for every store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GrowthPlan {
    /// The document (index into the created ones) of each operation.
    pub picks: Vec<u32>,
    /// The largest number of units any document reaches.
    pub max_units: u64,
}

impl GrowthPlan {
    /// Draws `counts.growth_ops` documents among `counts.growing_docs` from `seed`.
    pub(crate) fn new(counts: &Counts, seed: u64) -> GrowthPlan {
        let mut rng = fastrand::Rng::with_seed(seed);
        let docs = counts.growing_docs.max(1) as u32;
        let mut units = vec![1u64; docs as usize];
        let picks: Vec<u32> = (0..counts.growth_ops)
            .map(|_| {
                let i = rng.u32(0..docs);
                units[i as usize] += 1;
                i
            })
            .collect();
        GrowthPlan {
            picks,
            max_units: units.into_iter().max().unwrap_or(1),
        }
    }
}

/// Document-size bands of equal width, in KiB: about ten between zero and the largest document.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Bands {
    /// Each band's width, KiB.
    pub width_kib: f64,
}

impl Bands {
    /// Bands for documents of at most `max_kib` KiB.
    pub(crate) fn new(max_kib: f64) -> Bands {
        Bands {
            width_kib: (max_kib / 10.0).ceil().max(1.0),
        }
    }

    /// The band of a document of `kib` KiB (band `n` holds sizes above `n × width` up to
    /// `(n + 1) × width`).
    pub(crate) fn of(&self, kib: f64) -> usize {
        ((kib / self.width_kib).ceil() as usize).saturating_sub(1)
    }

    /// The band's label: `4–8 KiB`.
    pub(crate) fn label(&self, band: usize) -> String {
        let lo = band as f64 * self.width_kib;
        format!("{}–{} KiB", lo, lo + self.width_kib)
    }
}

/// A deterministic payload of `len` ASCII letters and digits (JSON needs no escaping, and the
/// content does not compress to nothing, so bytes on disk are bytes written).
pub(crate) fn payload(rng: &mut fastrand::Rng, len: u64) -> String {
    (0..len).map(|_| rng.alphanumeric()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_original_study_and_scale_multiplies_counts_not_sizes() {
        let d = Counts::DEFAULT;
        assert_eq!((d.growth_ops, d.groups()), (100_000, 10));
        let big = d.scaled(3.0);
        assert_eq!(big.growing_docs, 15_000);
        assert_eq!(big.fixed_rewrites, 120_000);
        assert_eq!(big.unit_bytes, 1024);
        assert_eq!(big.group_ops, 10_000);
        assert_eq!(big.groups(), 30);
        let tiny = Counts::QUICK.scaled(0.0001);
        assert_eq!(
            (tiny.growing_docs, tiny.growth_ops, tiny.groups()),
            (1, 1, 1)
        );
        assert_eq!(Counts::QUICK.groups(), 10);
    }

    #[test]
    fn the_plan_is_the_same_for_the_same_seed_and_adds_up() {
        let counts = Counts::QUICK;
        let a = GrowthPlan::new(&counts, 7);
        assert_eq!(a, GrowthPlan::new(&counts, 7));
        assert_ne!(a.picks, GrowthPlan::new(&counts, 8).picks);
        assert_eq!(a.picks.len() as u64, counts.growth_ops);
        assert!(a.picks.iter().all(|&i| (i as u64) < counts.growing_docs));
        let mut units = vec![1u64; counts.growing_docs as usize];
        for &i in &a.picks {
            units[i as usize] += 1;
        }
        assert_eq!(a.max_units, *units.iter().max().unwrap());
    }

    #[test]
    fn bands_cover_sizes_without_gaps() {
        let bands = Bands::new(45.0);
        assert_eq!(bands.width_kib, 5.0);
        assert_eq!(bands.of(1.0), 0);
        assert_eq!(bands.of(5.0), 0);
        assert_eq!(bands.of(5.5), 1);
        assert_eq!(bands.of(45.0), 8);
        assert_eq!(bands.label(1), "5–10 KiB");
        assert_eq!(Bands::new(3.0).width_kib, 1.0);
    }

    #[test]
    fn payloads_have_the_asked_length_and_need_no_json_escaping() {
        let mut rng = fastrand::Rng::with_seed(1);
        let p = payload(&mut rng, 1024);
        assert_eq!(p.len(), 1024);
        assert!(p.bytes().all(|b| b.is_ascii_alphanumeric()));
    }
}
