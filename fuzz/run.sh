#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 30) and says how
# long each ran clean and on how many inputs. Needs a nightly toolchain
# and cargo-fuzz; without them it says so and exits 0, so CI machines
# without nightly skip it — unless TROUPE_FUZZ_INSTALL=1, which installs
# both first (`rustup toolchain install nightly --profile minimal`,
# `cargo install cargo-fuzz --locked`; a failed install is a skip, said
# so, not a failure). A crash stops the script with the failing target's
# exit code; cargo-fuzz saves the input under fuzz/artifacts/<target>/ —
# turn it into a regression test in the crate's own tests.
#
#   fuzz/run.sh            # 30 s per target
#   fuzz/run.sh 300        # 5 minutes per target
#   fuzz/run.sh 60 text_plan model_wire   # only these
#
# Targets are built without a sanitizer (`-s none`): troupe is safe Rust,
# so what a run looks for is panics, hangs (over 10 s on one input) and
# unbounded memory (over 2 GB), and an uninstrumented build is faster to
# make and to run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
seconds="${1:-30}"
shift || true

# Each install gives up after 15 minutes (a network that stalls is a
# skip, not a CI run that hangs).
if [ "${TROUPE_FUZZ_INSTALL:-0}" = 1 ]; then
    if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
        echo "== fuzz: installing a nightly toolchain"
        timeout 900 rustup toolchain install nightly --profile minimal ||
            echo "== fuzz: the nightly install failed"
    fi
    if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
        echo "== fuzz: installing cargo-fuzz"
        timeout 900 cargo install cargo-fuzz --locked || echo "== fuzz: the cargo-fuzz install failed"
    fi
fi
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "== fuzz: skipped (no nightly toolchain; TROUPE_FUZZ_INSTALL=1 installs one)"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== fuzz: skipped (cargo-fuzz is not installed; TROUPE_FUZZ_INSTALL=1 installs it)"
    exit 0
fi

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

start=$SECONDS
echo "== fuzz: building ${#targets[@]} target(s)"
if [ "$#" -gt 0 ]; then
    for t in "${targets[@]}"; do
        cargo +nightly fuzz build -s none "$t"
    done
else
    cargo +nightly fuzz build -s none
fi
echo "   built in $((SECONDS - start)) s"
mkdir -p target

for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    # Seeds kept in the repository (seeds/<target>/), copied in each time.
    if [ -d "seeds/$t" ]; then
        cp -n "seeds/$t"/* "corpus/$t"/ 2>/dev/null || true
    fi
    start=$SECONDS
    echo "== fuzz $t: ${seconds} s"
    if cargo +nightly fuzz run -s none "$t" "corpus/$t" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 >"target/run-$t.log" 2>&1; then
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "target/run-$t.log" | grep -o '[0-9]*$' || echo '?')
        echo "   $t ran clean for $((SECONDS - start)) s ($runs inputs)"
    else
        status=$?
        tail -n 40 "target/run-$t.log"
        echo "== fuzz $t FAILED (exit $status) after $((SECONDS - start)) s; see fuzz/artifacts/$t/"
        exit "$status"
    fi
done
echo "== fuzz: every target ran clean"
