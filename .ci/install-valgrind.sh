#!/usr/bin/env bash
# Installs valgrind from Debian's packages (`valgrind`, 1:3.19.0 on Debian
# 12) when it is missing, for the instruction-count gate
# (benches/instructions.sh --check, run by .ci/run after the tests).
#
# Does nothing when `valgrind` is on PATH. Non-interactive; uses sudo only
# when not already root. Needs apt-get (Debian or Ubuntu).
set -euo pipefail

if command -v valgrind >/dev/null 2>&1; then
    echo "valgrind already installed: $(valgrind --version)"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-valgrind: apt-get not found; install valgrind yourself" >&2
    exit 1
fi

sudo_cmd=()
if [[ "$(id -u)" -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "install-valgrind: not root and no sudo; cannot install valgrind" >&2
        exit 1
    fi
    sudo_cmd=(sudo -n)
fi

echo "== installing valgrind (apt-get)"
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends valgrind
valgrind --version
