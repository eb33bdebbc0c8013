#!/usr/bin/env bash
# troupe against the Python peers (AutoGen, Microsoft Agent Framework, LangGraph)
# and the Rust peers (graph-flow, adk-graph, ADK-Rust, AutoAgents: benches/peers-rust)
# on the shared workloads of ../shared/bench/WORKLOADS.md, and `troupe serve`
# against LangGraph's Agent Server (`serve`, issue 44). Writes a Markdown
# table into BENCHMARKS.md (between <!-- compare:begin --> and <!-- compare:end -->).
#
#   benches/compare.sh --quick          # small sizes only, a few minutes
#   benches/compare.sh                  # every workload and size (long)
#   benches/compare.sh --only chain     # one workload
#   benches/compare.sh --only ckpt,conc # several (issue 18's two: checkpoints, concurrent runs)
#   benches/compare.sh --only serve     # troupe serve beside LangGraph's Agent Server (issue 44)
#   benches/compare.sh --sizes conc=1000 --sizes ckpt=200,1000  # sizes of a workload (repeatable)
#   benches/compare.sh --pairs 5        # alternating troupe/peer rounds (default 3)
#   benches/compare.sh --no-write       # print the table, leave BENCHMARKS.md alone
#   benches/compare.sh --no-build       # use the built bench and rustpeers as they are
#   benches/compare.sh --no-rust-peers  # leave the Rust peers out (no build, no rows)
#   benches/compare.sh --timeout 600    # seconds per process (default 120 quick, 1800 full)
#
# Environment: PEERS_DIR (default <repo>/../shared/bench/peers), PEERS_VENV
# (default <repo>/target/peers-venv, created with `python3 -m venv` and the
# peers' requirements.lock.txt if missing), PYTHON (the interpreter used to
# create the venv, default python3), COMPARE_SIZES (the --sizes default, as
# 'conc=1000;ckpt=200'), BENCH_PROFILE (the Cargo profile troupe's bench is
# built with, default `dist`: `release` plus fat LTO, see Cargo.toml). The full sizes of conc are K=1,000 and 10,000 for
# troupe and the peers (the peers take 2-6 min a process at 10,000) and
# 100,000 for troupe alone; --quick runs K=100 and ckpt N=200.
# The Rust peers are benches/peers-rust, its own Cargo project (not a workspace
# member, its own Cargo.lock), built --release --locked into
# <target>/peers-rust (the first build takes minutes: set CARGO_BUILD_JOBS on a
# shared machine).
# serve runs
# K=1 (one session, 50 turns: LangGraph takes ~1 s a turn) and K=1,000 (--quick: 20 turns, K=100); it
# needs target/<profile>/troupe (built here too) and the peer server's venv
# (SERVE_PEER_VENV, default <repo>/target/serve-peer-venv), made by
# benches/serve-peer-venv.sh, which this script calls.
#
# Not part of CI.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers_dir="${PEERS_DIR:-$repo/../shared/bench/peers}"
venv="${PEERS_VENV:-$repo/target/peers-venv}"
python="${PYTHON:-python3}"
profile="${BENCH_PROFILE:-dist}"

usage() { sed -n '2,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

build=1
rust=1
no_rust=0
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick | --no-write) args+=("$1") ;;
        --only | --pairs | --timeout | --sizes)
            [[ $# -ge 2 ]] || { echo "compare.sh: $1 needs a value" >&2; exit 2; }
            args+=("$1" "$2")
            shift
            ;;
        --no-build) build=0 ;;
        --no-rust-peers) rust=0; no_rust=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "compare.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

# Checked here too, so that a typo fails before the venv and the build.
for ((i = 0; i < ${#args[@]}; i++)); do
    if [[ "${args[i]}" == --only ]]; then
        IFS=, read -ra only <<< "${args[i + 1]}"
        for w in "${only[@]}"; do
            case "$w" in
                rr | sel | swarm | fan | rpc | pub | chain | fanin | idle | ckpt | conc | serve) ;;
                *) echo "compare.sh: --only $w: one of rr sel swarm fan rpc pub chain fanin idle ckpt conc serve" >&2; exit 2 ;;
            esac
        done
        # No Rust peer in these workloads: nothing of theirs to build.
        [[ ",${args[i + 1]}," =~ ,(rr|fan|pub|chain|fanin|idle), ]] || rust=0
    fi
done

# The serve workload runs unless --only leaves it out.
serve=1
for ((i = 0; i < ${#args[@]}; i++)); do
    if [[ "${args[i]}" == --only && ",${args[i + 1]}," != *,serve,* ]]; then
        serve=0
    fi
done
if [[ $serve -eq 1 ]]; then
    # Its peer: LangGraph's Agent Server in a venv of its own (pinned).
    "$repo/benches/serve-peer-venv.sh"
fi

if [[ ! -f "$peers_dir/requirements.lock.txt" ]]; then
    echo "compare.sh: no requirements.lock.txt in $peers_dir (set PEERS_DIR)" >&2
    exit 2
fi
peers_dir="$(cd "$peers_dir" && pwd)"

# The peers' virtualenv: created if missing, (re)installed if the lock files
# changed or an earlier install did not finish (the stamp is written last).
# ckpt's LangGraph side needs langgraph-checkpoint-sqlite besides the lock:
# peers/ckpt/venv-freeze.txt is the lock plus it, pinned.
locks=("$peers_dir/requirements.lock.txt")
[[ ! -f "$peers_dir/ckpt/venv-freeze.txt" ]] || locks+=("$peers_dir/ckpt/venv-freeze.txt")
stamp="$venv/.compare-requirements.lock.txt"
if [[ ! -x "$venv/bin/python" ]]; then
    echo "compare.sh: creating the peers' venv at $venv" >&2
    if ! "$python" -m venv "$venv"; then
        echo "compare.sh: '$python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)" >&2
        exit 1
    fi
fi
if ! cat "${locks[@]}" | cmp -s - "$stamp"; then
    echo "compare.sh: installing the peers' packages into $venv" >&2
    for lock in "${locks[@]}"; do
        "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$lock"
    done
    cat "${locks[@]}" > "$stamp"
fi

if [[ $build -eq 1 ]]; then
    echo "compare.sh: building the troupe bench (profile $profile)" >&2
    bins=(--example bench)
    # serve starts the troupe binary beside the bench (target/<profile>/troupe).
    [[ $serve -eq 0 ]] || bins+=(--bin troupe)
    (cd "$repo" && cargo build --profile "$profile" "${bins[@]}")
fi
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target_dir" == /* ]] || target_dir="$repo/$target_dir"
bench="$target_dir/$profile/examples/bench"
if [[ ! -x "$bench" ]]; then
    echo "compare.sh: $bench not found (run without --no-build)" >&2
    exit 1
fi

# The Rust peers: their own Cargo project, target dir and lock file.
rust_args=()
if [[ $rust -eq 1 ]]; then
    rust_bin="$target_dir/peers-rust/release/rustpeers"
    if [[ $build -eq 1 ]]; then
        echo "compare.sh: building the Rust peers (benches/peers-rust, release)" >&2
        (cd "$repo" && CARGO_TARGET_DIR="$target_dir/peers-rust" \
            cargo build --release --locked --manifest-path benches/peers-rust/Cargo.toml)
    fi
    if [[ ! -x "$rust_bin" ]]; then
        echo "compare.sh: $rust_bin not found (run without --no-build, or with --no-rust-peers)" >&2
        exit 1
    fi
    rust_args=(--rust-peers "$rust_bin")
fi

invoked=""
[[ -z "${PEERS_DIR:-}" ]] || invoked+="PEERS_DIR=$(printf '%q' "$PEERS_DIR") "
[[ -z "${PEERS_VENV:-}" ]] || invoked+="PEERS_VENV=$(printf '%q' "$PEERS_VENV") "
[[ -z "${COMPARE_SIZES:-}" ]] || invoked+="COMPARE_SIZES=$(printf '%q' "$COMPARE_SIZES") "
[[ -z "${BENCH_PROFILE:-}" ]] || invoked+="BENCH_PROFILE=$(printf '%q' "$BENCH_PROFILE") "
invoked+="benches/compare.sh"
for a in ${args[@]+"${args[@]}"}; do invoked+=" $(printf '%q' "$a")"; done
[[ $build -eq 1 ]] || invoked+=" --no-build"
[[ $no_rust -eq 0 ]] || invoked+=" --no-rust-peers"

exec "$venv/bin/python" "$repo/benches/compare.py" \
    --bench "$bench" --peers-dir "$peers_dir" --invoked-as "$invoked" ${rust_args[@]+"${rust_args[@]}"} \
    ${args[@]+"${args[@]}"}
