#!/usr/bin/env bash
# Makes the Python venv the SDK tests drive `troupe serve` and the `troupe`
# binary with: target/py-venv (or $TROUPE_PY_VENV) holding pinned packages
# from PyPI — `openai` (tests/serve_openai_sdk.rs), and the official A2A
# SDK `a2a-sdk` with its HTTP server extras and `uvicorn` to run its
# server (tests/a2a_sdk.rs), and the official MCP SDK `mcp`, whose servers of
# both eras troupe's MCP client is tested against (tests/cli_mcp_eras.rs).
# Does nothing when the venv already has every
# pinned version. Needs python3 with the venv module; reaches PyPI only.
# Any failure is an exit code other than 0 (.ci/run stops on it: CI never
# skips the SDK tests).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${TROUPE_PY_VENV:-target/py-venv}"
openai_version="1.109.1"
a2a_version="1.3.0"
uvicorn_version="0.54.0"
mcp_version="2.3.0"

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
pins=("openai==$openai_version" "a2a-sdk==$a2a_version" "uvicorn==$uvicorn_version" "mcp==$mcp_version")

if "$venv/bin/python" -c "$check" "${pins[@]}" 2>/dev/null; then
    echo "== $venv has ${pins[*]}"
    exit 0
fi
echo "== making $venv with ${pins[*]}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
    "openai==$openai_version" "a2a-sdk[http-server]==$a2a_version" "uvicorn==$uvicorn_version" \
    "mcp==$mcp_version"
"$venv/bin/python" -c "$check" "${pins[@]}"
"$venv/bin/python" -c "import openai, a2a, uvicorn; print('== openai', openai.__version__, '/ a2a-sdk $a2a_version / uvicorn', uvicorn.__version__, '/ mcp $mcp_version')"
