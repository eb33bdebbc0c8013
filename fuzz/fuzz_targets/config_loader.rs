//! Any bytes given to the config loader give a config or diagnostics,
//! never a panic or a hang; a loaded config also draws as Mermaid.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        match troupe_config::Config::parse(text, "fuzz.yaml") {
            Ok(config) => {
                let _ = config.mermaid();
            }
            Err(e) => {
                // Every diagnostic renders.
                let _ = e.to_string();
            }
        }
    }
});
