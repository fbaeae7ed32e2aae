#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrule::fuzzing::tool_arguments(data));
