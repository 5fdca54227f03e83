//! cargo-fuzz target `h3_response`: arbitrary bytes into latscope's parser (see
//! `latscope::fuzzing`); a panic is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (_, f) = latscope::fuzzing::TARGETS
        .iter()
        .find(|(name, _)| *name == "h3_response")
        .expect("a known target");
    f(data);
});
