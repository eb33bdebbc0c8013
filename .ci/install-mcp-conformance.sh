#!/usr/bin/env bash
# Installs the official MCP conformance suite (`@modelcontextprotocol/conformance`,
# pinned) and the Node it needs (>= 22; the machine has 20: the `node` package
# on npm, pinned) under target/mcp-conformance/, for the conformance tests of
# troupe's MCP client and server (tests/mcp_conformance*.rs). Does nothing
# when both are there at their pinned versions. Reaches the npm registry only.
# Any failure is an exit code other than 0 (.ci/run stops on it).
#
#   target/mcp-conformance/node_modules/.bin/node \
#       target/mcp-conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js list
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir="target/mcp-conformance"
node_version="22.23.3"
conformance_version="0.1.16"

# The version of an installed package, or nothing.
installed() {
    local manifest="$dir/node_modules/$1/package.json"
    [ -f "$manifest" ] && sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$manifest" | head -n 1
}

if [ "$(installed node)" = "$node_version" ] \
    && [ "$(installed @modelcontextprotocol/conformance)" = "$conformance_version" ] \
    && "$dir/node_modules/.bin/node" --version >/dev/null 2>&1; then
    echo "== $dir has node@$node_version and @modelcontextprotocol/conformance@$conformance_version"
    exit 0
fi
echo "== installing node@$node_version and @modelcontextprotocol/conformance@$conformance_version into $dir"
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error \
    "node@$node_version" "@modelcontextprotocol/conformance@$conformance_version"
[ "$(installed node)" = "$node_version" ]
[ "$(installed @modelcontextprotocol/conformance)" = "$conformance_version" ]
echo "== $("$dir/node_modules/.bin/node" --version), conformance $conformance_version"
