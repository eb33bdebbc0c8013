"""Checks every event of recorded AG-UI SSE streams against the official
AG-UI Python SDK's event models (`ag-ui-protocol`, `ag_ui.core.Event`):
each `data:` payload must parse as the event its `type` names. Prints
`checked N events` and exits 0, or prints each failure and exits 1.

Usage: python agui_events.py STREAM.sse...
"""
import sys

from pydantic import TypeAdapter

from ag_ui.core import Event

adapter = TypeAdapter(Event)
checked = 0
failures = []
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.startswith("data:"):
                continue
            payload = line[len("data:"):].strip()
            try:
                adapter.validate_json(payload)
            except Exception as e:  # noqa: BLE001 - every failure is reported
                failures.append(f"{path}:{n}: {e}")
            checked += 1
for f in failures:
    print(f)
print(f"checked {checked} events, {len(failures)} invalid")
sys.exit(1 if failures or checked == 0 else 0)
