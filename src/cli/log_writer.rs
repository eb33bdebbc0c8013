//! Where the log lines go: stderr, each line through the redaction layer
//! (`troupe::secrets`) first — at `trace`, other crates (rmcp, say) log
//! whole protocol messages, and a secret in one (an MCP server's `env:`
//! echoed back) must not be printed.

use std::io::{self, Write};

/// A `MakeWriter` for the fmt layer: stderr, redacted.
pub(crate) fn redacted_stderr() -> RedactedStderr {
    RedactedStderr
}

/// Stderr, with every registered secret masked in what is written. The fmt
/// layer writes each formatted event in one piece, so a secret is never
/// split across writes.
pub(crate) struct RedactedStderr;

impl Write for RedactedStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        io::stderr()
            .lock()
            .write_all(troupe::secrets::redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}
