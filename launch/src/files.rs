//! The process's open-file limit: a server holds a file per connection, so the soft
//! `RLIMIT_NOFILE` (often 1,024) is raised to the hard one at start, as nginx's
//! `worker_rlimit_nofile` and systemd's services do, and the connection limit is fitted to it.

use anyhow::bail;

/// Raises the soft open-file limit to the hard one; returns the soft limit now in force (`None`
/// where it cannot be read, or is unlimited).
pub(crate) fn raise_open_files() -> Option<u64> {
    #[cfg(unix)]
    {
        use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
        let mut now = soft;
        if hard > soft {
            match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
                Ok(()) => {
                    tracing::debug!(from = soft, to = hard, "open-file limit raised");
                    now = hard;
                }
                Err(e) => tracing::warn!(error = %e, soft, hard, "open-file limit not raised"),
            }
        }
        (now != RLIM_INFINITY).then_some(now)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Files a process keeps open besides its connections (stores, listeners, peers, logs).
const RESERVED_FILES: u64 = 256;

/// The connections per service that fit in `open_files` (the process's file limit, if known)
/// shared by `services` services: an explicit `--max-connections` past it is refused, the default
/// lowered to it with a line saying so.
pub(crate) fn fit_connections(
    wanted: usize,
    explicit: bool,
    services: usize,
    open_files: Option<u64>,
) -> anyhow::Result<usize> {
    let Some(open_files) = open_files else {
        return Ok(wanted);
    };
    let per_service = open_files.saturating_sub(RESERVED_FILES) / services.max(1) as u64;
    let fits = usize::try_from(per_service).unwrap_or(usize::MAX).max(1);
    if wanted <= fits {
        return Ok(wanted);
    }
    if explicit {
        bail!(
            "--max-connections {wanted}: this process may open {open_files} files \
             (RLIMIT_NOFILE), so {services} service(s) can hold at most {fits} connections each \
             ({RESERVED_FILES} kept for stores and listeners); raise the limit (ulimit -n) or ask \
             for at most {fits}"
        );
    }
    tracing::warn!(
        from = wanted,
        to = fits,
        open_files,
        "max connections per service lowered to fit the process's open-file limit"
    );
    Ok(fits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_open_file_limit_ends_at_the_hard_one() {
        let now = raise_open_files();
        #[cfg(unix)]
        {
            use nix::sys::resource::{getrlimit, Resource, RLIM_INFINITY};
            let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
            assert_eq!(soft, hard);
            assert_eq!(now, (soft != RLIM_INFINITY).then_some(soft));
        }
        #[cfg(not(unix))]
        assert_eq!(now, None);
    }

    #[test]
    fn connections_are_fitted_to_the_open_file_limit() {
        // Enough files: as asked.
        assert_eq!(
            fit_connections(16_384, false, 3, Some(1_048_576)).unwrap(),
            16_384
        );
        assert_eq!(fit_connections(100, true, 3, None).unwrap(), 100);
        // The default past 1,024 files for three services: lowered to (1,024 − 256) ÷ 3.
        assert_eq!(fit_connections(16_384, false, 3, Some(1_024)).unwrap(), 256);
        // Asked for explicitly: refused, saying what would fit.
        let err = fit_connections(16_384, true, 3, Some(1_024))
            .unwrap_err()
            .to_string();
        assert!(err.contains("at most 256 connections each"), "{err}");
        assert!(err.contains("RLIMIT_NOFILE"), "{err}");
        // A limit below the reserve still leaves one connection.
        assert_eq!(fit_connections(10, false, 1, Some(100)).unwrap(), 1);
    }
}
