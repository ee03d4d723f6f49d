//! What the storage study records, and the recorder both ways of running it (through the `Store`
//! trait, through HTTP) fill the same way: latencies into HdrHistograms (microseconds; mean, p50 and
//! p99 from them), the growth in groups of operations and in document-size bands, and the bytes on
//! disk where the store can say.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::plan::Bands;
use brigade_records::histogram::LatencyHistogram;

/// Latency figures of a set of operations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Figures {
    /// Operations measured.
    pub ops: u64,
    /// Mean, ms.
    pub mean_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Wall-clock seconds the operations took together (checks and bookkeeping included).
    pub seconds: f64,
}

impl Figures {
    /// The figures of `histogram`, over `seconds`.
    pub(crate) fn of(histogram: &LatencyHistogram, seconds: f64) -> Figures {
        let latency = histogram.latency();
        Figures {
            ops: histogram.len(),
            mean_ms: latency.mean_ms,
            p50_ms: latency.p50_ms,
            p99_ms: latency.p99_ms,
            seconds,
        }
    }
}

/// One phase (create, read, rewrite, ...) of one store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PhaseResult {
    /// The phase's name.
    pub phase: String,
    /// Its operations' latencies.
    pub figures: Figures,
    /// Bytes on disk after it (`None`: the store keeps nothing on disk or cannot say).
    pub on_disk_bytes: Option<u64>,
}

/// One group of growth operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GroupResult {
    /// The first operation of the group (1-based).
    pub first_op: u64,
    /// The last operation of the group.
    pub last_op: u64,
    /// Read + grow latencies.
    pub figures: Figures,
    /// Mean of the reads alone, ms.
    pub read_mean_ms: f64,
    /// Mean of the growths alone, ms.
    pub grow_mean_ms: f64,
    /// Mean size of the documents read, KiB.
    pub mean_doc_kib: f64,
    /// The documents' payload in all at the group's end, MiB (where the study can tell).
    pub data_mib: Option<f64>,
    /// Bytes on disk at the group's end.
    pub on_disk_bytes: Option<u64>,
}

/// The growth operations on documents of one size band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BandResult {
    /// The band's number (0 for the smallest documents).
    pub band: usize,
    /// Its label (`5–10 KiB`).
    pub label: String,
    /// Mean size of the documents read in it, KiB.
    pub mean_doc_kib: f64,
    /// Read + grow latencies.
    pub figures: Figures,
}

/// The growing-documents phase of one store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GrowingResult {
    /// Creating the documents.
    pub create: PhaseResult,
    /// All read + grow operations together.
    pub grow: PhaseResult,
    /// The growth, group by group.
    pub groups: Vec<GroupResult>,
    /// The growth, by the size of the document read.
    pub bands: Vec<BandResult>,
    /// Documents read back and found with the size written (every read, every growth's answer).
    pub checked: u64,
}

/// The fixed-size phase of one store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FixedResult {
    /// Create, read, rewrite (read + same-size rewrite pairs).
    pub phases: Vec<PhaseResult>,
    /// Documents read back and found with the size written.
    pub checked: u64,
}

#[derive(Debug, Default)]
struct Group {
    both: LatencyHistogram,
    read: LatencyHistogram,
    grow: LatencyHistogram,
    kib: f64,
    seconds: f64,
}

#[derive(Debug, Default)]
struct Band {
    both: LatencyHistogram,
    kib: f64,
}

/// Collects the growth operations into groups and size bands as they happen.
#[derive(Debug)]
pub(crate) struct GrowthRecorder {
    bands: Bands,
    group_ops: u64,
    done: u64,
    group: Group,
    all: LatencyHistogram,
    all_seconds: f64,
    groups: Vec<GroupResult>,
    by_band: BTreeMap<usize, Band>,
    checked: u64,
}

impl GrowthRecorder {
    /// A recorder reporting every `group_ops` operations and by `bands`.
    pub(crate) fn new(bands: Bands, group_ops: u64) -> GrowthRecorder {
        GrowthRecorder {
            bands,
            group_ops: group_ops.max(1),
            done: 0,
            group: Group::default(),
            all: LatencyHistogram::new(),
            all_seconds: 0.0,
            groups: Vec::new(),
            by_band: BTreeMap::new(),
            checked: 0,
        }
    }

    /// Counts documents found with the size written.
    pub(crate) fn checked(&mut self, documents: u64) {
        self.checked += documents;
    }

    /// Records one operation on a document of `doc_kib` KiB (as read): its read and its growth,
    /// and the wall-clock time the whole step took.
    pub(crate) fn record(&mut self, doc_kib: f64, read: Duration, grow: Duration, wall: Duration) {
        let both = read + grow;
        self.done += 1;
        self.group.both.record(both);
        self.group.read.record(read);
        self.group.grow.record(grow);
        self.group.kib += doc_kib;
        self.group.seconds += wall.as_secs_f64();
        self.all.record(both);
        self.all_seconds += wall.as_secs_f64();
        let band = self.by_band.entry(self.bands.of(doc_kib)).or_default();
        band.both.record(both);
        band.kib += doc_kib;
    }

    /// Whether the current group is complete (the caller then measures the disk and closes it).
    pub(crate) fn group_full(&self) -> bool {
        self.group.both.len() >= self.group_ops
    }

    /// Closes the current group (if it holds anything) with the store's state at its end.
    pub(crate) fn close_group(
        &mut self,
        data_mib: Option<f64>,
        on_disk_bytes: Option<u64>,
    ) -> Option<&GroupResult> {
        let group = std::mem::take(&mut self.group);
        let ops = group.both.len();
        if ops == 0 {
            return None;
        }
        self.groups.push(GroupResult {
            first_op: self.done - ops + 1,
            last_op: self.done,
            figures: Figures::of(&group.both, group.seconds),
            read_mean_ms: group.read.latency().mean_ms,
            grow_mean_ms: group.grow.latency().mean_ms,
            mean_doc_kib: group.kib / ops as f64,
            data_mib,
            on_disk_bytes,
        });
        self.groups.last()
    }

    /// The growing phase's result, with `create` as its first phase; closes a last partial group
    /// with `on_disk_bytes`.
    pub(crate) fn finish(
        mut self,
        create: PhaseResult,
        data_mib: Option<f64>,
        on_disk_bytes: Option<u64>,
    ) -> GrowingResult {
        self.close_group(data_mib, on_disk_bytes);
        let bands = self
            .by_band
            .iter()
            .map(|(&band, b)| BandResult {
                band,
                label: self.bands.label(band),
                mean_doc_kib: b.kib / b.both.len().max(1) as f64,
                figures: Figures::of(&b.both, 0.0),
            })
            .collect();
        GrowingResult {
            create,
            grow: PhaseResult {
                phase: "read + grow".to_owned(),
                figures: Figures::of(&self.all, self.all_seconds),
                on_disk_bytes: self.groups.last().and_then(|g| g.on_disk_bytes),
            },
            groups: self.groups,
            bands,
            checked: self.checked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_land_in_their_group_and_band() {
        let mut rec = GrowthRecorder::new(Bands { width_kib: 2.0 }, 3);
        let ms = Duration::from_millis;
        for (kib, read) in [(1.0, 1), (2.0, 2), (3.0, 3), (5.0, 4)] {
            rec.record(kib, ms(read), ms(1), ms(read + 1));
            if rec.group_full() {
                let group = rec.close_group(Some(1.0), Some(4096)).unwrap();
                assert_eq!((group.first_op, group.last_op), (1, 3));
                assert!((group.mean_doc_kib - 2.0).abs() < 1e-9);
                assert!((group.read_mean_ms - 2.0).abs() < 0.01, "{group:?}");
            }
        }
        rec.checked(8);
        let create = PhaseResult {
            phase: "create".into(),
            figures: Figures::default(),
            on_disk_bytes: None,
        };
        let result = rec.finish(create, None, None);
        assert_eq!(result.groups.len(), 2, "the last, partial group is kept");
        assert_eq!(
            (result.groups[1].first_op, result.groups[1].last_op),
            (4, 4)
        );
        assert_eq!(result.grow.figures.ops, 4);
        let bands: Vec<(usize, u64)> = result
            .bands
            .iter()
            .map(|b| (b.band, b.figures.ops))
            .collect();
        assert_eq!(bands, [(0, 2), (1, 1), (2, 1)]);
        assert_eq!(result.bands[2].label, "4–6 KiB");
        assert_eq!(result.checked, 8);
    }
}
