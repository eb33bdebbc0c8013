#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance)
# and the Node it needs (>= 22; CI machines have Node 20) under
# target/mcp-conformance/: the npm package `node` (a Node binary for this
# platform) and the suite, both pinned, in one local npm project. The tests
# that run the suite (tests/mcp_conformance.rs) call
# target/mcp-conformance/node_modules/.bin/node on the suite's CLI.
# Does nothing when both pinned versions are there already. Reaches the npm
# registry only. Any failure is an exit code other than 0 (.ci/run stops on
# it: CI never skips the conformance tests).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir="${TROUPE_MCP_CONFORMANCE_DIR:-target/mcp-conformance}"
node_version="22.23.3"
conformance_version="0.2.0-alpha.12"

node_bin="$dir/node_modules/.bin/node"
cli="$dir/node_modules/@modelcontextprotocol/conformance/package.json"

installed() {
    [[ -x "$node_bin" && -f "$cli" ]] || return 1
    [[ "$("$node_bin" --version 2>/dev/null)" == "v$node_version" ]] || return 1
    grep -q "\"version\": \"$conformance_version\"" "$cli"
}

if installed; then
    echo "== $dir has node $node_version and @modelcontextprotocol/conformance $conformance_version"
    exit 0
fi
echo "== installing node $node_version and @modelcontextprotocol/conformance $conformance_version into $dir"
mkdir -p "$dir"
if [[ ! -f "$dir/package.json" ]]; then
    printf '{"name": "troupe-mcp-conformance", "private": true}\n' >"$dir/package.json"
fi
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --save-exact \
    "node@$node_version" "@modelcontextprotocol/conformance@$conformance_version"
installed || {
    echo "== $dir: node $node_version or the conformance suite $conformance_version is missing after npm install" >&2
    exit 1
}
echo "== $("$node_bin" --version) and @modelcontextprotocol/conformance $conformance_version in $dir"
