#!/usr/bin/env bash
# Installs the official A2A JavaScript SDK (`@a2a-js/sdk`, pinned with its
# one dependency in .ci/a2a-js/package-lock.json) under target/a2a-js (or
# $TROUPE_A2A_JS), for tests/a2a_js_sdk.rs, whose Node script
# (tests/js/a2a_js_client.mjs) drives `troupe serve` with its client.
#
# Does nothing when the pinned version is already there. Needs Node 20+ and
# npm; reaches the npm registry only. Any failure is an exit code other
# than 0 (.ci/run stops on it: CI never skips the test).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir="${TROUPE_A2A_JS:-target/a2a-js}"
version="1.3.0"

installed() {
    node -e 'const p = require(process.argv[1]); process.exit(p.version === process.argv[2] ? 0 : 1)' \
        "$(realpath -m "$dir/node_modules/@a2a-js/sdk/package.json")" "$version" 2>/dev/null
}

if installed; then
    echo "== $dir has @a2a-js/sdk $version"
    exit 0
fi
echo "== installing @a2a-js/sdk $version in $dir (node $(node --version))"
mkdir -p "$dir"
cp .ci/a2a-js/package.json .ci/a2a-js/package-lock.json "$dir/"
(cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
installed
echo "== @a2a-js/sdk $version installed in $dir"
