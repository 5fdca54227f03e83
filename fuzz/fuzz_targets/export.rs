//! cargo-fuzz target `export`: arbitrary bytes into latscope's parser (see
//! `latscope::fuzzing`); a panic is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (_, f) = latscope::fuzzing::TARGETS
        .iter()
        .find(|(name, _)| *name == "export")
        .expect("a known target");
    f(data);
});
