"""The `serve` workload of benches/compare.py (issue 44): `troupe serve` beside
LangGraph's Agent Server (`langgraph dev`, in-memory), both driven by the same
client, troupe's `bench serve` (examples/bench/serve.rs), with the same K
sessions, turns and model latency.

A row is one K: K = 1 is one session alone, 50 user turns in a row (the added
latency of a turn with nothing else running); larger K is a burst of K sessions
of one turn each (throughput, memory per session). Every figure is the median
of the runs of its side; the table marks the issue's targets.
"""

from __future__ import annotations

import dataclasses
import os
import statistics

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Turns per session: one session alone takes many in a row; a burst one each.
SOLO_TURNS = 50
QUICK_SOLO_TURNS = 20
LATENCY_MS = 20
# Issue 44's targets for troupe.
ADDED_P50_MS = 1.0  # one session alone
TTFT_P50_MS = 5.0  # one session alone, streamed
THROUGHPUT_AT_1000 = 2 * 4682  # user turns/s at 1,000 sessions
KIB_PER_SESSION = 48.0

FIELDS = [
    "throughput_turns_s", "added_p50_ms", "added_p99_ms", "stream_added_p50_ms", "stream_added_p99_ms",
    "ttft_added_p50_ms", "ttft_added_p99_ms", "kib_per_session", "server_peak_mib",
]


def serve_rows(plan, size: int, quick: bool) -> list[tuple]:
    """troupe's side and LangGraph's for K = size: (label, troupe, peers, note, extra)."""
    turns = (QUICK_SOLO_TURNS if quick else SOLO_TURNS) if size == 1 else 1
    flags = ["--k", size, "--n", turns, "--latency-ms", LATENCY_MS]
    t = plan.troupe("serve", *flags, "--store", "sqlite")
    t = dataclasses.replace(t, field="throughput_turns_s")
    side = type(t)  # compare.Side, without importing compare (it imports this module)
    argv = [plan.bench, "serve", *map(str, flags), "--server", "langgraph", "--threads", "1"]
    shown = " ".join([os.path.relpath(plan.bench, REPO), "serve", *map(str, flags), "--server", "langgraph", "--threads", "1"])
    venv = os.environ.get("SERVE_PEER_VENV", os.path.join(REPO, "target", "serve-peer-venv"))
    skip = None if os.path.exists(os.path.join(venv, "bin", "langgraph")) else "no langgraph-cli venv: benches/serve-peer-venv.sh"
    peer = side(key=shown, label="LangGraph Agent Server (langgraph dev, in-memory)", argv=argv, shown=shown,
                field="throughput_turns_s", cwd=REPO, skip=skip)
    label = f"K={size:,} × {turns} turn{'s' if turns != 1 else ''}"
    return [(label, t, [peer], "", {"turns": turns})]


def med(side, field: str):
    vals = [r["result"][field] for r in side.runs
            if isinstance(r.get("result", {}).get(field), (int, float)) and side.value(r) is not None]
    return statistics.median(vals) if vals else None


def ms(v) -> str:
    return "—" if v is None else (f"{v:.3f}" if v < 10 else f"{v:,.0f}" if v >= 1000 else f"{v:.1f}")


def mark(ok) -> str:
    return "" if ok is None else (" ✓" if ok else " ✗")


def serve_table(rows) -> list[str]:
    """One line per server and K: the medians of each figure, troupe's against the issue's targets."""
    sv = [r for r in rows if r.workload == "serve"]
    if not sv:
        return []
    out = [
        f"**serve** — K sessions through each server's own HTTP API on 127.0.0.1 (troupe: `/v1/chat/completions`; "
        f"LangGraph: `/threads/{{id}}/runs/wait` and `/runs/stream`), a 3-agent team over a scripted model waiting "
        f"{LATENCY_MS} ms a call (60 ms of model time a user turn); added = client's time − 60 ms. Medians of the runs; "
        f"targets (issue 44, troupe): one session's added p50 ≤ {ADDED_P50_MS:g} ms and added TTFT p50 ≤ {TTFT_P50_MS:g} ms, "
        f"≥ {THROUGHPUT_AT_1000:,} user turns/s and ≤ {KIB_PER_SESSION:g} KiB per session at K = 1,000.",
        "",
        "| K × turns | server | user turns/s | added p50 / p99 (ms) | streamed: added p50 / p99 (ms) | "
        "added TTFT p50 / p99 (ms) | KiB per session | server peak RSS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in sv:
        for side in [row.troupe] + row.peers:
            name = "troupe serve (SQLite)" if side is row.troupe else side.label
            if side.median() is None:
                out.append(f"| {row.size_label} | {name} | {side.status()} | | | | | |")
                continue
            m = {f: med(side, f) for f in FIELDS}
            is_t = side is row.troupe
            solo, burst = row.size == 1, row.size >= 1000
            tp_ok = m["throughput_turns_s"] >= THROUGHPUT_AT_1000 if is_t and burst else None
            add_ok = m["added_p50_ms"] <= ADDED_P50_MS if is_t and solo else None
            ttft_ok = m["ttft_added_p50_ms"] <= TTFT_P50_MS if is_t and solo else None
            kib_ok = m["kib_per_session"] <= KIB_PER_SESSION if is_t and burst else None
            runs = len(side.ok_values())
            out.append(
                f"| {row.size_label} | {name} ({runs} run{'s' if runs != 1 else ''}) | "
                f"{m['throughput_turns_s']:,.0f}{mark(tp_ok)} | "
                f"{ms(m['added_p50_ms'])}{mark(add_ok)} / {ms(m['added_p99_ms'])} | "
                f"{ms(m['stream_added_p50_ms'])} / {ms(m['stream_added_p99_ms'])} | "
                f"{ms(m['ttft_added_p50_ms'])}{mark(ttft_ok)} / {ms(m['ttft_added_p99_ms'])} | "
                f"{m['kib_per_session']:.1f}{mark(kib_ok)} | {m['server_peak_mib']:.0f} MiB |"
            )
    out.append("")
    return out
