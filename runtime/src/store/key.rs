//! Validation of run and conversation ids.
//!
//! The file store uses ids as file and directory names, so an id must be one
//! safe path component. Every store applies the same rules, so that code
//! moving from the memory store to the file store does not find its ids
//! refused later.

use super::error::StoreError;

/// Longest id accepted, in bytes: file names are limited to 255 bytes on
/// common file systems, and the file store adds a suffix.
pub const MAX_ID_LEN: usize = 200;

/// Checks that `id` can name a run or conversation in every store: not
/// empty, at most [`MAX_ID_LEN`] bytes, no path separator, NUL or control
/// character, not starting with `.` (which also rules out `.` and `..`, and
/// keeps ids apart from the stores' hidden temporary files).
pub(crate) fn check_id(kind: &'static str, id: &str) -> Result<(), StoreError> {
    let reason = if id.is_empty() {
        Some("it is empty")
    } else if id.len() > MAX_ID_LEN {
        Some("it is longer than 200 bytes")
    } else if id.contains(['/', '\\']) {
        Some("it contains a path separator")
    } else if id.chars().any(char::is_control) {
        Some("it contains a control character")
    } else if id.starts_with('.') {
        Some("it starts with '.'")
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(StoreError::InvalidId {
            kind,
            // Escaped so a control character does not garble the message.
            id: id
                .chars()
                .take(MAX_ID_LEN)
                .collect::<String>()
                .escape_debug()
                .to_string(),
            reason,
        }),
    }
}

/// Checks a run id: the rules every store applies (see [`MAX_ID_LEN`]),
/// for a caller that names a run before any store sees it.
pub fn check_run_id(id: &str) -> Result<(), StoreError> {
    check_id("run id", id)
}

/// Checks a conversation id.
pub(crate) fn check_conversation_id(id: &str) -> Result<(), StoreError> {
    check_id("conversation id", id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_ids_pass_and_unsafe_ones_are_named() {
        for ok in ["a", "run-1", "user@example.com", "Ünïcode ok", "a.b"] {
            assert!(check_run_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", ".hidden", "a/b", "a\\b", "a\0b", "a\nb"] {
            let e = check_conversation_id(bad).unwrap_err();
            assert!(e.to_string().contains("invalid conversation id"), "{e}");
        }
        assert!(check_run_id(&"x".repeat(MAX_ID_LEN + 1)).is_err());
    }
}
