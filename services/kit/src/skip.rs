//! How a test that cannot run here says so: one line straight to stderr (the test harness
//! captures `eprintln!` of a passing test, and a skip must be seen), and one reading of
//! `BRIGADE_REQUIRE_MONGO`, under which a MongoDB test that would skip fails instead (as in CI).

/// Writes one line to the process's stderr directly, past the test harness's capture.
pub fn loud(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Whether `BRIGADE_REQUIRE_MONGO` (`1` or `true`) asks for a failure instead of a skip.
pub fn require_mongo() -> bool {
    std::env::var("BRIGADE_REQUIRE_MONGO").is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Skips a test that needs MongoDB, saying `why` loudly; under `BRIGADE_REQUIRE_MONGO` panics
/// with it instead.
pub fn skip_mongo(why: &str) {
    if require_mongo() {
        panic!("BRIGADE_REQUIRE_MONGO is set but {why}");
    }
    loud(&format!("!!! SKIPPING: {why}"));
}
