#!/usr/bin/env bash
# kill -9 at random points, for the benchmark write-up: runs the crash tests
# of tests/cli_crash.rs — a SQLite store and a directory store — with 100
# kills each (or the number given) and ~1 MiB messages (or the bytes given),
# and prints their JSON summary lines: store, kills, how many hit a run under
# way, resumes, torn tails repaired, fresh starts (killed before the first
# checkpoint), messages lost and repeated, runs whose final thread differs
# from an uninterrupted run's, runs `troupe runs` lists, SQLite's `PRAGMA
# integrity_check`, and the seconds it took.
#
#   benches/crash.sh              # 100 kills per store, 1 MiB messages
#   benches/crash.sh 500 65536    # 500 kills per store, 64 KiB messages
#
# Not part of CI (CI runs the same tests with 20 and 6 kills).
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-100}"
bytes="${2:-1048576}"
out="$(TROUPE_CRASH_KILLS="$kills" TROUPE_CRASH_BYTES="$bytes" cargo test --quiet --test cli_crash -- --nocapture --test-threads 1 2>&1)" || {
    printf '%s\n' "$out" >&2
    exit 1
}
printf '%s\n' "$out" | sed -n 's/^crash summary: //p'
