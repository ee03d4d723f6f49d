//! h2spec (github.com/summerwind/h2spec, installed by `scripts/conformance-tools.sh`) against one
//! server: its JUnit report read back case by case. A case's id is h2spec's own
//! (`http2/6.5.3/2`: its spec, section and number within the section), so `h2spec http2/6.5.3/2`
//! runs it alone; its section is the RFC's (RFC 9113's numbering follows RFC 7540's, which h2spec
//! cites; `hpack/` is RFC 7541; `generic/` is h2spec's own checks of ordinary exchanges).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// One h2spec case's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct H2Case {
    /// h2spec's id (`http2/6.5.3/2`).
    pub(crate) id: String,
    /// The section, as the report cites it (`RFC 7540 §6.5.3`).
    pub(crate) section: String,
    /// What it sends, in h2spec's words.
    pub(crate) what: String,
    /// None when it passed (or h2spec skipped it); else h2spec's words on what went wrong.
    pub(crate) failure: Option<String>,
    /// Whether h2spec skipped it (a precondition the server did not meet).
    pub(crate) skipped: bool,
}

/// Runs h2spec `binary` against `addr` on `path`, over TLS with `tls`, each case waiting at most
/// `timeout_s` seconds; `only`: h2spec's spec arguments (`http2/5.1`), or every case. Fails when
/// h2spec ran no case (a wrong flag can "pass" with nothing run).
pub(crate) fn run(
    binary: &Path,
    addr: SocketAddr,
    path: &str,
    tls: bool,
    timeout_s: u32,
    only: &[&str],
) -> Result<Vec<H2Case>> {
    let report = tempfile::NamedTempFile::new()?;
    let mut command = Command::new(binary);
    command
        .args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string()])
        .args(["-P", path, "-o", &timeout_s.to_string(), "-j"])
        .arg(report.path())
        .args(only);
    if tls {
        command.args(["-t", "-k"]);
    }
    // h2spec exits 1 when a case fails: its report, not its status, says what ran.
    let output = command
        .output()
        .with_context(|| format!("could not run {}", binary.display()))?;
    let xml = std::fs::read_to_string(report.path()).unwrap_or_default();
    let cases = parse_junit(&xml)?;
    if cases.is_empty() {
        bail!(
            "h2spec ran no case against {addr}{path} ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(cases)
}

/// The cases of an h2spec JUnit report, in its order.
pub(crate) fn parse_junit(xml: &str) -> Result<Vec<H2Case>> {
    if xml.trim().is_empty() {
        return Ok(Vec::new());
    }
    // h2spec quotes what it received into its failures, raw: a NUL or another control byte there
    // is no XML, so each becomes U+FFFD first.
    let xml: String = xml
        .chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if c < ' ' => '\u{FFFD}',
            c => c,
        })
        .collect();
    let doc = roxmltree::Document::parse(&xml).context("h2spec's JUnit report")?;
    let mut cases = Vec::new();
    for suite in doc.descendants().filter(|n| n.has_tag_name("testsuite")) {
        let package = suite.attribute("package").unwrap_or_default();
        for (i, case) in suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .enumerate()
        {
            let child = |tag: &str| case.children().find(|n| n.has_tag_name(tag));
            let failure = child("failure").or_else(|| child("error")).map(|n| {
                let text = n.text().unwrap_or_default().trim();
                let message = n.attribute("message").unwrap_or_default().trim();
                one_line(if text.is_empty() { message } else { text })
            });
            cases.push(H2Case {
                id: format!("{package}/{}", i + 1),
                section: section(package),
                what: case.attribute("classname").unwrap_or_default().to_owned(),
                failure,
                skipped: child("skipped").is_some(),
            });
        }
    }
    Ok(cases)
}

/// The RFC section an h2spec package checks: `http2/6.5.3` → `RFC 7540 §6.5.3`.
fn section(package: &str) -> String {
    match package.split_once('/') {
        Some(("http2", s)) => format!("RFC 7540 §{s}"),
        Some(("hpack", s)) => format!("RFC 7541 §{s}"),
        Some(("generic", s)) => format!("h2spec generic §{s}"),
        _ => package.to_owned(),
    }
}

/// h2spec's multi-line explanation on one line, at most 200 characters.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &joined[..at]),
        None => joined,
    }
}

/// h2spec's version for the setup section: the one `scripts/conformance-tools.sh` pinned (its
/// stamp beside `bin/`) with what the binary calls itself (2.2.1 says `2.0.0`), else the latter.
pub(crate) fn version(binary: &Path) -> Option<String> {
    let out = Command::new(binary).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.trim();
    let says = line
        .trim_start_matches("Version:")
        .split_whitespace()
        .next()?;
    let stamp = binary.parent()?.parent()?.join("h2spec.version");
    Some(match std::fs::read_to_string(stamp) {
        Ok(pinned) => format!("{} (calls itself {says})", pinned.trim()),
        Err(_) => says.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="1. Starting HTTP/2" package="generic/1" id="1" tests="0" skipped="0" failures="0" errors="0"></testsuite>
  <testsuite name="4.2. Frame Size" package="http2/4.2" id="4.2" tests="3" skipped="0" failures="1" errors="1">
    <testcase package="http2/4.2" classname="Sends a DATA frame with 2^14 octets in length" time="0.0022"></testcase>
    <testcase package="http2/4.2" classname="Sends a large size DATA frame" time="0.0026">
      <error>unexpected EOF</error>
    </testcase>
    <testcase package="http2/4.2" classname="Sends a large size HEADERS frame" time="0.0043">
      <failure message="">The endpoint MUST send a connection error of type FRAME_SIZE_ERROR.
      Expected: GOAWAY Frame (Error Code: FRAME_SIZE_ERROR)
        Actual: RST_STREAM Frame (length:4, flags:0x00, stream_id:1)</failure>
    </testcase>
  </testsuite>
  <testsuite name="6.3. Dynamic Table Size Update" package="hpack/6.3" id="6.3" tests="1" skipped="1" failures="0" errors="0">
    <testcase package="hpack/6.3" classname="Sends a dynamic table size update" time="0"><skipped/></testcase>
  </testsuite>
</testsuites>"#;

    #[test]
    fn a_junit_report_reads_as_cases_with_h2specs_ids_and_the_rfcs_sections() {
        let cases = parse_junit(REPORT).unwrap();
        assert_eq!(cases.len(), 4);
        assert_eq!(cases[0].id, "http2/4.2/1");
        assert_eq!(cases[0].failure, None);
        assert_eq!(cases[1].failure.as_deref(), Some("unexpected EOF"));
        assert_eq!(cases[2].id, "http2/4.2/3");
        assert_eq!(cases[2].section, "RFC 7540 §4.2");
        let words = cases[2].failure.as_deref().unwrap();
        assert!(
            words.starts_with("The endpoint MUST send") && !words.contains('\n'),
            "{words}"
        );
        assert!(cases[3].skipped && cases[3].failure.is_none());
        assert_eq!(cases[3].section, "RFC 7541 §6.3");
        assert!(parse_junit("").unwrap().is_empty());
        let raw = REPORT.replace("unexpected EOF", "got \0\x01 back");
        let cases = parse_junit(&raw).expect("control bytes in a failure do not break the report");
        assert_eq!(
            cases[1].failure.as_deref(),
            Some("got \u{FFFD}\u{FFFD} back")
        );
    }
}
