//! What a caught panic says.
//!
//! A workflow runs every turn under `catch_unwind` and reports a panicking
//! agent by its panic's text. Code that runs agents outside a workflow —
//! the agent host of `troupe-cluster`, which runs turns for other nodes —
//! uses the same function, so a panic reads the same wherever it happened.

/// The text of a caught panic's payload: the `&str` or `String` given to
/// `panic!`, or a fixed text for any other payload.
///
/// ```
/// let caught = std::panic::catch_unwind(|| panic!("out of {}", "tea")).unwrap_err();
/// assert_eq!(troupe_runtime::panic_text(caught), "out of tea");
/// ```
pub fn panic_text(panic: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_string()
    }
}
