#!/usr/bin/env bash
# Soak (not in CI): the long runs that used to grow, in release, their
# figures written to target/soak.txt (per-message time and RSS in the
# first tenth against the last; see examples/soak.rs). Each runs with a
# history of 1,000 messages per thread (`max_history`), then keeping
# everything (`all`) for comparison.
#
#   benches/soak.sh                   # 1,000,000 router messages, 10,000 chat turns
#   benches/soak.sh 100000 2000       # shorter
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
messages="${1:-1000000}"
turns="${2:-10000}"
cargo build --release --example soak
out=target/soak.txt
{
    echo "# soak $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores; $(rustc --version)"
    for history in 1000 all; do
        target/release/examples/soak router "$messages" "$history"
        target/release/examples/soak chat "$turns" 8192 "$history"
    done
} | tee "$out"
echo "== written to $out"
