//! Session options (`SessionOptions::set_pair`: keys, enum values and the `<family>.exec_plan`
//! JSON): any text gives options or a one-line error, and a refused pair changes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neon_models::session::SessionOptions;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut options = SessionOptions::new();
    for pair in text.split('\u{1e}') {
        let before = options.clone();
        if let Err(e) = options.set_pair(pair) {
            assert_eq!(options, before, "a refused pair changed the options");
            assert!(!e.to_string().contains('\n'), "a message of more than one line: {e}");
        }
    }
    let _ = SessionOptions::from_pairs(options.describe()).expect("describe() is valid input");
});
