#!/usr/bin/env bash
# Makes the Python venv tests/serve_openai_sdk.rs drives `troupe serve` with:
# target/py-venv (or $TROUPE_PY_VENV) holding the pinned `openai` package
# from PyPI. Does nothing when the venv already has that version. Needs
# python3 with the venv module; reaches PyPI only. Any failure is an exit
# code other than 0 (.ci/run stops on it: CI never skips the SDK test).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${TROUPE_PY_VENV:-target/py-venv}"
version="1.109.1"

if "$venv/bin/python" -c "import sys, openai; sys.exit(openai.__version__ != '$version')" 2>/dev/null; then
    echo "== $venv has openai $version"
    exit 0
fi
echo "== making $venv with openai $version"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet "openai==$version"
"$venv/bin/python" -c "import openai; print('== openai', openai.__version__)"
