//! The kit's house rules, routing, query and body decoding on every route of the three services.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| brigade_fuzz::kit_dispatch(data));
