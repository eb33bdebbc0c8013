#!/usr/bin/env bash
# Installs AG-UI's official TypeScript client, `@ag-ui/client` (pinned),
# under target/node-agui (or $TROUPE_AGUI_NODE_DIR), for
# tests/serve_agui.rs, which drives `troupe serve`'s AG-UI endpoint with it
# (tests/js/agui_client.mjs). Does nothing when the pinned version is
# there. Needs Node 20+ and npm; reaches the npm registry only. Any failure
# is an exit code other than 0 (.ci/run stops on it: CI never skips it).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir="${TROUPE_AGUI_NODE_DIR:-target/node-agui}"
version="1.0.0"

installed() {
    node -e "const p = require('path').resolve(process.argv[1], 'node_modules/@ag-ui/client/package.json');
             process.exit(require(p).version === process.argv[2] ? 0 : 1)" "$dir" "$version" 2>/dev/null
}

if installed; then
    echo "== $dir has @ag-ui/client@$version"
    exit 0
fi
echo "== installing @ag-ui/client@$version in $dir"
mkdir -p "$dir"
printf '{"name": "troupe-agui-client-test", "private": true}\n' > "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --save-exact --silent "@ag-ui/client@$version"
installed
echo "== @ag-ui/client $version, node $(node --version)"
