//! The serve announcement parsers (the JSON lines compare reads from a server it starts).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| brigade_fuzz::announcement(data));
