#!/usr/bin/env bash
# Makes the venv of the `serve` workload's peer server: LangGraph's Agent
# Server in its in-memory dev mode (`langgraph dev`, from
# `langgraph-cli[inmem]`), at target/serve-peer-venv (or $SERVE_PEER_VENV),
# every package pinned by benches/serve_peer/requirements.lock.txt (PyPI).
# `bench serve --server langgraph` starts it from there; benches/compare.sh
# calls this script when it runs the serve workload. Not run by CI's tests.
# Does nothing when the venv already holds the lock (a stamp written last);
# any failure is an exit code other than 0.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${SERVE_PEER_VENV:-target/serve-peer-venv}"
lock=benches/serve_peer/requirements.lock.txt
stamp="$venv/.serve-peer-requirements.lock.txt"

if [[ -x "$venv/bin/langgraph" ]] && cmp -s "$lock" "$stamp"; then
    echo "== $venv has langgraph-cli[inmem] as $lock pins it"
    exit 0
fi
echo "== making $venv from $lock"
if [[ ! -x "$venv/bin/python" ]]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet -r "$lock"
"$venv/bin/langgraph" --version
"$venv/bin/python" -c "import langgraph_api, langgraph_runtime_inmem, langchain_core; print('== venv ready: langgraph-api', __import__('importlib.metadata').metadata.version('langgraph-api'))"
cp "$lock" "$stamp"
