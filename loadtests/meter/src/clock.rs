//! The wall clock in the two shapes reports use: RFC 3339 for a report's start time, and a compact
//! stamp for folder and database names. Compare and the studies (`brigade-studies`) both write them.

/// Now, as RFC 3339 in UTC.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.replace_nanosecond(0)
        .unwrap_or(now)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Now, as `20250101-120000` (UTC), for folder and database names.
pub fn stamp() -> String {
    time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!(
            "[year][month][day]-[hour][minute][second]"
        ))
        .unwrap_or_default()
}
