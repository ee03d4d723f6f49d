//! The scenario TOML compiler.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| brigade_fuzz::scenario_toml(data));
