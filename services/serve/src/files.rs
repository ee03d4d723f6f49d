//! The process's open-file limit: a server holds a file per connection, so the soft
//! `RLIMIT_NOFILE` (often 1,024) is raised to the hard one at start, as nginx's
//! `worker_rlimit_nofile` and systemd's services do, and the connection limit is fitted to it.

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
}
