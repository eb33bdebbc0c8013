//! What the user pipes in — a task on stdin, the lines of a chat — read
//! with a cap, so that `< /dev/zero` or a runaway producer is an error
//! that names the limit, never a read that grows without end.

use std::io::{Error, ErrorKind, Read};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// A task, or one line of a chat, is at most this many bytes (16 MiB).
pub(crate) const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

fn too_long(what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidData,
        format!("{what} is longer than the {MAX_INPUT_BYTES}-byte limit"),
    )
}

fn text(bytes: Vec<u8>, what: &str) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|e| {
        Error::new(
            ErrorKind::InvalidData,
            format!(
                "{what} is not UTF-8 text (byte {} is not)",
                e.utf8_error().valid_up_to() + 1
            ),
        )
    })
}

/// Reads all of `input` (a task on stdin), at most [`MAX_INPUT_BYTES`].
pub(crate) fn read_all(input: impl Read) -> Result<String, Error> {
    let mut bytes = Vec::new();
    input.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_long("the input"));
    }
    text(bytes, "the input")
}

/// The next line of `input` without its line end, at most
/// [`MAX_INPUT_BYTES`]; `None` at the end of the input.
pub(crate) async fn next_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
) -> Result<Option<String>, Error> {
    let mut bytes = Vec::new();
    let read = (&mut *input)
        .take(MAX_INPUT_BYTES + 1)
        .read_until(b'\n', &mut bytes)
        .await?;
    if read == 0 {
        return Ok(None);
    }
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_long("a line"));
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
    }
    text(bytes, "a line").map(Some)
}

#[cfg(test)]
mod tests {
    use super::{next_line, read_all};

    #[tokio::test]
    async fn lines_end_at_newlines_and_the_input_at_its_end() {
        let mut input = tokio::io::BufReader::new(&b"one\r\ntwo\nthree"[..]);
        assert_eq!(next_line(&mut input).await.unwrap().as_deref(), Some("one"));
        assert_eq!(next_line(&mut input).await.unwrap().as_deref(), Some("two"));
        assert_eq!(
            next_line(&mut input).await.unwrap().as_deref(),
            Some("three")
        );
        assert_eq!(next_line(&mut input).await.unwrap(), None);
        let err = read_all(&b"caf\xe9"[..]).unwrap_err();
        assert!(err.to_string().contains("byte 4 is not"), "{err}");
    }
}
