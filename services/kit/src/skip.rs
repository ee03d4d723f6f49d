//! How a test that cannot run here says so: one line straight to stderr (the test harness
//! captures `eprintln!` of a passing test, and a skip must be seen), and one reading of a
//! `BRIGADE_REQUIRE_*` variable (`BRIGADE_REQUIRE_MONGO`, `BRIGADE_REQUIRE_CGROUP`), under which a
//! test that would skip fails instead (as in CI, where the skip would hide a broken setup).

/// Writes one line to the process's stderr directly, past the test harness's capture.
pub fn loud(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Whether the environment variable `var` (`1` or `true`) asks for a failure instead of a skip.
pub fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Skips a test that needs what this machine lacks, saying `why` loudly; when `var` asks for it
/// ([`required`]) panics with it instead.
pub fn skip_unless_required(var: &str, why: &str) {
    if required(var) {
        panic!("{var} is set but {why}");
    }
    loud(&format!("!!! SKIPPING: {why}"));
}

/// Whether `BRIGADE_REQUIRE_MONGO` (`1` or `true`) asks for a failure instead of a skip.
pub fn require_mongo() -> bool {
    required("BRIGADE_REQUIRE_MONGO")
}

/// Skips a test that needs MongoDB, saying `why` loudly; under `BRIGADE_REQUIRE_MONGO` panics
/// with it instead.
pub fn skip_mongo(why: &str) {
    skip_unless_required("BRIGADE_REQUIRE_MONGO", why);
}
