//! The report's "Correctness" section: the conformance study it shows (`--conformance-report`, or
//! the newest `results/study-conformance-*`), read once the comparison is measured. A comparison
//! runs no conformance case itself: `brigade study conformance` does (its own servers), and its
//! date is in the section; `--conformance` runs that study's quick form for the compared runtimes
//! once the comparison is measured ([`run_study`]), so that its servers never share the CPUs with
//! a measurement.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use brigade_report::correctness::Correctness;

/// Where studies are written by default (`brigade study conformance` without `--out`).
const RESULTS: &str = "results";
/// The prefix of a conformance study's folder there.
const PREFIX: &str = "study-conformance-";

/// What the study at `asked` (or the newest under `results/`) found for `runtimes`; None where
/// there is none. A study asked for by path that cannot be read is an error.
pub(crate) fn read(
    asked: Option<&Path>,
    runtimes: &[String],
) -> anyhow::Result<Option<Correctness>> {
    let path = match asked {
        Some(p) if p.is_dir() => p.join("report.json"),
        Some(p) => p.to_path_buf(),
        None => match newest(Path::new(RESULTS)) {
            Some(p) => p,
            None => return Ok(None),
        },
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(_) if asked.is_none() => return Ok(None),
        Err(e) => {
            return Err(e).with_context(|| format!("--conformance-report {}", path.display()))
        }
    };
    let study: brigade_report::study::StudyReport = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a study report", path.display()))?;
    let found = Correctness::from_study(&study, &path.display().to_string(), runtimes);
    if found.is_none() && asked.is_some() {
        anyhow::bail!("{} is not a conformance study's report", path.display());
    }
    Ok(found)
}

/// `--conformance`: `binary study conformance --quick --runtimes R1,R2,...` into `out/conformance/`
/// (its output in `conformance.log` there), the binary the servers are started from running it
/// (it serves the same runtimes' controls). Returns the study's folder. A study that could not
/// run is an error naming its log; its cases' failures are not (they are what it reports).
pub(crate) fn run_study(binary: &Path, runtimes: &[String], out: &Path) -> anyhow::Result<PathBuf> {
    let dir = out.join("conformance");
    std::fs::create_dir_all(&dir)?;
    let log_path = dir.join("conformance.log");
    let log = std::fs::File::create(&log_path)?;
    println!(
        "conformance: {} study conformance --quick --runtimes {} (its output: {})",
        binary.display(),
        runtimes.join(","),
        log_path.display()
    );
    let status = Command::new(binary)
        .args(["study", "conformance", "--quick", "--runtimes"])
        .arg(runtimes.join(","))
        .arg("--binary")
        .arg(binary)
        .arg("--out")
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .with_context(|| format!("--conformance: could not run {}", binary.display()))?;
    anyhow::ensure!(
        status.success(),
        "--conformance: the study failed ({status}); its output: {}",
        log_path.display()
    );
    Ok(dir)
}

/// The newest conformance study's report under `dir` (folders are named by their UTC stamp, so
/// the greatest name is the newest).
fn newest(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
        .map(|e| e.path().join("report.json"))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_study_folder_is_found_by_its_stamp_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(newest(dir.path()), None);
        for stamp in ["20261201-100000", "20261205-090000", "20261203-235959"] {
            let d = dir.path().join(format!("{PREFIX}{stamp}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("report.json"), "{}").unwrap();
        }
        std::fs::create_dir_all(dir.path().join("compare-20991231-000000")).unwrap();
        let found = newest(dir.path()).unwrap();
        assert!(
            found.ends_with("study-conformance-20261205-090000/report.json"),
            "{found:?}"
        );
        assert!(
            read(Some(&dir.path().join("nothing.json")), &[]).is_err(),
            "asked for: an error"
        );
    }
}
