#!/usr/bin/env bash
# kill -9 at random points, for the benchmark write-up: runs the crash test
# of tests/cli_crash.rs with 100 kills (or the number given) and prints its
# JSON summary line — kills, how many hit a run under way, resumes, fresh
# starts (killed before the first checkpoint), messages lost and repeated,
# runs whose final thread differs from an uninterrupted run's, SQLite's
# `PRAGMA integrity_check`, and the seconds it took.
#
#   benches/crash.sh          # 100 kills
#   benches/crash.sh 500      # 500 kills
#
# Not part of CI (CI runs the same test with 20 kills).
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-100}"
out="$(TROUPE_CRASH_KILLS="$kills" cargo test --quiet --test cli_crash -- --nocapture 2>&1)" || {
    printf '%s\n' "$out" >&2
    exit 1
}
printf '%s\n' "$out" | sed -n 's/^crash summary: //p'
