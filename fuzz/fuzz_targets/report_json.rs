//! `report.json` read back and judged again (`--rejudge`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| brigade_fuzz::report_json(data));
