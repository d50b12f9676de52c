#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| csf_fuzz::kernels(data));
