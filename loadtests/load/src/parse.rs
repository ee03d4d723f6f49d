//! The parsers of the load command's flag values — durations, rates, percentages, CPU lists,
//! targets — in a module of their own so the argument structs of `load` and of the SLO search both
//! use them without importing each other.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::scenario::DEFAULT_SERVICE;

/// Turns `--target` values into service → URL: `URL` alone serves every service (`*`),
/// `NAME=URL` one service; without a `URL` alone, a scenario that names no service goes to the
/// first `NAME=URL`.
pub fn parse_targets(values: &[String]) -> Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    let mut first_named = None;
    for v in values {
        match v.split_once('=') {
            // A target for a service this scenario does not use is fine: one command line can
            // name all the services and run any scenario.
            Some((name, url)) if !name.contains("://") && !name.contains('/') => {
                map.insert(name.to_string(), url.to_string());
                first_named.get_or_insert_with(|| url.to_string());
            }
            _ => {
                if map.insert("*".to_string(), v.clone()).is_some() {
                    bail!("--target {v}: only one target may be given without a NAME=");
                }
            }
        }
    }
    if let Some(url) = first_named.filter(|_| !map.contains_key("*")) {
        map.entry(DEFAULT_SERVICE.to_string()).or_insert(url);
    }
    Ok(map)
}

/// Parses `1`, `2-3`, `0,2,4-5` into CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse()?, b.trim().parse()?);
                if a > b {
                    bail!("CPU range {part} runs backwards");
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(
                part.parse()
                    .with_context(|| format!("{part:?} is not a CPU number"))?,
            ),
        }
    }
    if cpus.is_empty() {
        bail!("no CPU in {text:?}");
    }
    Ok(cpus)
}

/// Parses `10s`, `2m`, `500ms`, `1m30s`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let parsed = match t.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => {
            Duration::try_from_secs_f64(secs).map_err(|e| format!("{text:?}: {e}"))?
        }
        _ => humantime::parse_duration(t)
            .map_err(|e| format!("{text:?} is not a duration (try 30s, 2m, 500ms): {e}"))?,
    };
    if parsed > MAX_DURATION {
        return Err(format!(
            "{text:?} is longer than any run here ({} days at most)",
            MAX_DURATION.as_secs() / 86_400
        ));
    }
    Ok(parsed)
}

/// A rate flag's value, requests per second, in the range [`crate::engine::check_rate`] allows.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of requests per second"))?;
    crate::engine::check_rate("rate", rate).map_err(|e| e.to_string())?;
    Ok(rate)
}

/// A percentage flag's value: more than 0, at most 100.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let pct: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a percentage"))?;
    if !(pct > 0.0 && pct <= 100.0) {
        return Err(format!(
            "{text:?}: a percentage here is more than 0 and at most 100"
        ));
    }
    Ok(pct)
}

/// The longest duration a flag takes: a year (a soak, a timeout); past it a value is a typo, and
/// adding it to a clock could overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 86_400);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_cpu_lists_and_targets_parse() {
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2.5").unwrap(), Duration::from_millis(2500));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("18446744073709551616").is_err());
        assert!(parse_duration("366days").is_err());
        assert_eq!(parse_cpu_list("0,2-4").unwrap(), vec![0, 2, 3, 4]);
        assert!(parse_cpu_list("3-1").is_err());

        let t = parse_targets(&["http://h:1".into(), "api=http://h:2".into()]).unwrap();
        assert_eq!(t["*"], "http://h:1");
        assert_eq!(t["api"], "http://h:2");
        // A service the scenario does not use may be named; two unnamed targets are ambiguous.
        let named = parse_targets(&["other=http://h:3".into(), "more=http://h:4".into()]).unwrap();
        assert_eq!(named["other"], "http://h:3");
        // A scenario naming no service goes to the first NAME=URL when no URL stands alone.
        assert_eq!(named[DEFAULT_SERVICE], "http://h:3");
        assert!(
            !t.contains_key(DEFAULT_SERVICE),
            "the unnamed URL serves it: {t:?}"
        );
        assert!(parse_targets(&["http://h:1".into(), "http://h:2".into()]).is_err());
        assert!(parse_targets(&[]).unwrap().is_empty());
    }
}
