//! A server's freed memory goes back to the OS as it is freed: a
//! long-lived `troupe` (`serve`, `node`, `mcp`) runs with mimalloc's purge
//! delay at 0.
//!
//! mimalloc hands emptied pages back to the OS only once they have been
//! empty for its purge delay (10 ms by default) — and it looks at their
//! age only when the thread that freed them next calls the allocator. A
//! server's worker threads go quiet after a burst, so what the burst freed
//! stayed resident until the next burst: with `bench serve --k 1000`
//! (BENCHMARKS.md, round three) 49–51 KiB per session after the burst,
//! 41–42 KiB with the delay at 0, at the same throughput. A delay of 0
//! costs a `madvise` as a page empties, off the latency path.
//!
//! mimalloc reads its options from the environment when the process
//! starts, before `main`; setting one later takes `mi_option_set`, an
//! `unsafe` call the workspace forbids (`unsafe_code = "forbid"`). So a
//! long-lived command execs the same binary once more, first thing, with
//! `MIMALLOC_PURGE_DELAY=0` added: the same process (its pid, its file
//! descriptors, its arguments), started again with the option read. A
//! delay the environment sets already is kept, and the exec is not made;
//! if it fails (no path to the binary), the process goes on as it is.
//! Processes it starts (MCP servers) inherit the variable, which only a
//! program built with mimalloc reads.

/// The commands that run until stopped, whose memory after a burst counts.
const LONG_LIVED: [&str; 3] = ["serve", "node", "mcp"];

/// The variable mimalloc reads its purge delay from, in milliseconds.
const PURGE_DELAY: &str = "MIMALLOC_PURGE_DELAY";

/// For a long-lived command, execs this binary again with the purge delay
/// at 0 unless the environment sets one; returns only if it does not
/// (another command, a delay set, or a failed exec). Built only where
/// mimalloc allocates (not the `system-allocator` build) on Unix.
pub(crate) fn apply() {
    use std::os::unix::process::CommandExt;

    if std::env::var_os(PURGE_DELAY).is_some() || !long_lived(std::env::args_os().skip(1)) {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
    // Returns only on failure; the process then goes on unchanged.
    let _failed = std::process::Command::new(exe)
        .arg0(arg0)
        .args(args)
        .env(PURGE_DELAY, "0")
        .exec();
}

/// Whether `args` (the process's, after its name) run a long-lived
/// command. Any argument naming one counts — a prompt of `serve` makes a
/// `troupe run` exec once for nothing, which is harmless — so options
/// before the command need no parsing here.
fn long_lived(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    args.into_iter()
        .any(|a| LONG_LIVED.iter().any(|c| a == std::ffi::OsStr::new(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<std::ffi::OsString> {
        a.iter().map(Into::into).collect()
    }

    #[test]
    fn the_long_lived_commands_are_found_wherever_they_stand() {
        assert!(long_lived(args(&["serve", "teams/"])));
        assert!(long_lived(args(&[
            "--log-level",
            "debug",
            "node",
            "--name",
            "a"
        ])));
        assert!(long_lived(args(&["mcp", "team.yaml"])));
        assert!(!long_lived(args(&["run", "serve.yaml", "go"])));
        assert!(!long_lived(args(&["validate", "team.yaml"])));
        assert!(!long_lived(args(&[])));
    }
}
