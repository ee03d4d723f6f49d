//! xitca's request path over an in-memory connection: the bytes as a client's, every answer parsed.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| brigade_fuzz::request_path("xitca", data));
