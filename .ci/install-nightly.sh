#!/usr/bin/env bash
# Makes sure a nightly toolchain is there for the public-API snapshot test
# (api-check/tests/public_api.rs builds rustdoc JSON, a nightly-only
# output), installing it with rustup (minimal profile) when missing, as
# fuzz/run.sh does for the fuzz step.
#
# Does nothing when `cargo +nightly` works. The snapshot's pinned
# `public-api` reads one rustdoc JSON format (57, the installed nightly's);
# a different nightly fails that test naming both formats and the fix.
set -euo pipefail

if cargo +nightly --version >/dev/null 2>&1; then
    echo "nightly already installed: $(cargo +nightly --version)"
    exit 0
fi
echo "== installing a nightly toolchain (rustup, minimal profile)"
timeout 900 rustup toolchain install nightly --profile minimal
cargo +nightly --version
