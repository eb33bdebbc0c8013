#!/usr/bin/env bash
# Makes the Python venv the SDK tests drive `troupe serve` and the `troupe`
# binary with: target/py-venv (or $TROUPE_PY_VENV) holding pinned packages
# from PyPI:
# - `openai` (tests/serve_openai_sdk.rs);
# - the official A2A SDK `a2a-sdk` with its HTTP server extras, and
#   `uvicorn` to run its server (tests/a2a_sdk.rs);
# - the official MCP SDK `mcp`: the client of troupe's MCP server
#   (tests/mcp_sdk.rs), and servers of both eras troupe's MCP client is
#   tested against (tests/cli_mcp_eras.rs);
# - the AG-UI validator `ag-ui-validate` with the official AG-UI SDK
#   `ag-ui-protocol`, whose event models check every event
#   (tests/serve_agui.rs);
# - `opentelemetry-proto` (with `protobuf`) for the OTLP receiver that
#   decodes troupe's spans and metrics (tests/cli_otlp_python.rs).
# Does nothing when the venv already has every pinned version. Needs python3
# with the venv module; reaches PyPI only. Any failure is an exit code other
# than 0 (.ci/run stops on it: CI never skips the SDK tests).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${TROUPE_PY_VENV:-target/py-venv}"

# What pip installs (extras included), one per line; the check below reads
# the name==version of each.
installs=(
    "openai==1.109.1"
    "a2a-sdk[http-server]==1.3.0"
    "uvicorn==0.54.0"
    "mcp==2.3.0"
    "ag-ui-validate==0.4.0"
    "ag-ui-protocol==1.0.0"
    "opentelemetry-proto==1.45.2"
    "protobuf==7.36.2"
)
pins=()
for spec in "${installs[@]}"; do
    pins+=("$(sed 's/\[[^]]*\]//' <<<"$spec")")
done

# Each package at its pinned version, or exit 1.
check='
import sys
from importlib.metadata import version, PackageNotFoundError
pins = dict(arg.split("==") for arg in sys.argv[1:])
try:
    sys.exit(any(version(name) != pin for name, pin in pins.items()))
except PackageNotFoundError:
    sys.exit(1)
'

if "$venv/bin/python" -c "$check" "${pins[@]}" 2>/dev/null; then
    echo "== $venv has ${pins[*]}"
    exit 0
fi
echo "== making $venv with ${pins[*]}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet "${installs[@]}"
"$venv/bin/python" -c "$check" "${pins[@]}"
"$venv/bin/python" -c "import openai, a2a, uvicorn, mcp, ag_ui.core, ag_ui_validate, opentelemetry.proto.trace.v1.trace_pb2; print('== venv ready:', ' '.join(__import__('sys').argv[1:]))" "${pins[@]}"
