//! The generator's answer parser: the head, then the body by length, chunks or close.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| brigade_fuzz::response_parser(data));
