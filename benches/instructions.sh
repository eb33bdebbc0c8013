#!/usr/bin/env bash
# The instruction-count gate (issue 38 item 5): callgrind counts the
# instructions of the `rr`, `chain` and `ckpt` workloads of the bench
# example (examples/bench.rs) at small sizes, and --check compares each
# with benches/instructions.baseline within a tolerance, so a hot-path
# regression fails review instead of waiting for a benchmark round.
#
#   benches/instructions.sh --check    # CI (.ci/run, after the tests)
#   benches/instructions.sh --update   # rewrite the baseline (an intended change)
#   benches/instructions.sh            # print the counts, compare nothing
#
# It runs the debug build of the example that `cargo test --workspace`
# already builds (target/debug/examples/bench), so CI compiles nothing more
# for it; `cargo build --workspace --example bench` builds the same binary by
# hand (without --workspace, features unify differently: another binary,
# other counts). Counts also move with the compiler: after a toolchain
# change, --update. Debug code counts
# other instructions than `release` would, but the same code counts the
# same again: a change to the hot path moves it. Every workload runs on a
# current-thread runtime (`--threads 1`) and `ckpt` on the memory store,
# so no second thread's spinning or parking is counted.
#
# Without valgrind: CI (CI=true) fails; elsewhere it prints SKIP and exits 0.
# TROUPE_INSTR_TOLERANCE (percent, default 3) widens or narrows the check.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode="${1:-}"
case "$mode" in
--check | --update | "") ;;
*)
    echo "usage: benches/instructions.sh [--check|--update]" >&2
    exit 2
    ;;
esac
baseline=benches/instructions.baseline
tolerance="${TROUPE_INSTR_TOLERANCE:-3}"
bin="${CARGO_TARGET_DIR:-target}/debug/examples/bench"

# name and arguments of each workload, small enough for ~2 min under callgrind
workloads=(
    "rr|rr --n 1000 --threads 1"
    "chain|chain --runs 100 --threads 1"
    "ckpt|ckpt --store memory --n 200 --reps 1 --threads 1"
)

if ! command -v valgrind >/dev/null 2>&1; then
    if [[ "${CI:-}" == "true" ]]; then
        echo "instructions: valgrind not found in CI (.ci/install-valgrind.sh installs it)" >&2
        exit 1
    fi
    echo "== SKIP instructions: valgrind not found; the instruction-count gate did NOT run" >&2
    exit 0
fi
if [[ ! -x "$bin" ]]; then
    echo "instructions: $bin not found; build it with: cargo build --workspace --example bench" >&2
    exit 1
fi

# Instructions counted by callgrind for one run of the bench (its summary's
# "Collected" line); the example's own JSON line goes to /dev/null.
count() {
    local log
    log="$(mktemp)"
    # shellcheck disable=SC2086 # the workload's arguments split on purpose
    if ! valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file="$log" \
        "$bin" $1 >/dev/null; then
        cat "$log" >&2
        rm -f "$log"
        return 1
    fi
    awk '/Collected :/ { print $NF }' "$log"
    rm -f "$log"
}

declare -A measured
for entry in "${workloads[@]}"; do
    name="${entry%%|*}"
    args="${entry#*|}"
    start=$SECONDS
    measured[$name]="$(count "$args")"
    echo "instructions: $name ($args): ${measured[$name]} in $((SECONDS - start)) s"
done

if [[ "$mode" == "--update" ]]; then
    {
        echo "# Instructions callgrind counts for each workload of benches/instructions.sh"
        echo "# (debug build of examples/bench.rs). Rewritten by: benches/instructions.sh --update"
        for entry in "${workloads[@]}"; do
            name="${entry%%|*}"
            echo "$name ${measured[$name]}"
        done
    } >"$baseline"
    echo "== instructions: $baseline updated"
    exit 0
fi
[[ "$mode" == "--check" ]] || exit 0

failed=0
for entry in "${workloads[@]}"; do
    name="${entry%%|*}"
    base="$(awk -v n="$name" '$1 == n { print $2 }' "$baseline")"
    if [[ -z "$base" ]]; then
        echo "instructions: FAILED $name: no baseline in $baseline" >&2
        failed=1
        continue
    fi
    now="${measured[$name]}"
    change="$(awk -v b="$base" -v m="$now" 'BEGIN { printf "%+.2f", (m - b) * 100 / b }')"
    if awk -v c="$change" -v t="$tolerance" 'BEGIN { exit !(c > t || c < -t) }'; then
        echo "instructions: FAILED $name: baseline $base, measured $now ($change%, tolerance ±$tolerance%)" >&2
        failed=1
    else
        echo "instructions: ok $name: baseline $base, measured $now ($change%)"
    fi
done
if ((failed)); then
    echo "== instructions: a workload moved past ±$tolerance%. If the change is intended (a" >&2
    echo "   faster hot path, or a cost worth paying), run benches/instructions.sh --update" >&2
    echo "   and commit $baseline with the reason; otherwise find what changed in the hot path." >&2
    exit 1
fi
echo "== instructions: all within ±$tolerance% of $baseline"
