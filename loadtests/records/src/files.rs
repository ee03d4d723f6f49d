//! Files from outside (scenarios, fixtures, shard results, reports) read with a size bound: a
//! file that is not what it claims (a device, a multi-gigabyte dump) is refused with a message
//! instead of filling the memory.

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};

/// The largest scenario, growth description or fixtures file read: 64 MiB.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// The largest result or report read back: 1 GiB (a long comparison's report with every run's
/// histograms is tens of MiB).
pub const MAX_REPORT_BYTES: u64 = 1 << 30;

/// `path` as UTF-8 text, refused past `max` bytes; `what` names it in errors ("scenario").
pub fn read_text(path: &Path, max: u64, what: &str) -> Result<String> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("Failed to read {what} {}", path.display()))?;
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("Failed to read {what} {} as UTF-8 text", path.display()))?;
    if text.len() as u64 > max {
        bail!(
            "{what} {} is larger than {max} bytes: not a file Brigade wrote or reads",
            path.display()
        );
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_the_bound_is_refused_and_one_under_it_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x".repeat(100)).unwrap();
        assert_eq!(read_text(&path, 100, "test").unwrap().len(), 100);
        let e = read_text(&path, 99, "test").unwrap_err().to_string();
        assert!(e.contains("larger than 99 bytes"), "{e}");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(read_text(&path, 100, "test").is_err());
    }
}
