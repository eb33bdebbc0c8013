#!/usr/bin/env python3
"""troupe against the Python peers, workload by workload (../shared/bench/WORKLOADS.md).

Run through `benches/compare.sh`, which creates the peers' virtualenv, builds
`target/dist/examples/bench` (profile `dist`: release plus fat LTO) and starts
this script with the venv's python.

For every workload and size it runs troupe's bench and each peer script that is
the peer side of that workload, one process per run, alternately (troupe, peer 1,
peer 2, ..., troupe, peer 1, ...) for `--pairs` rounds, and takes the median of
each side's figure. The best peer is the one with the lowest median; the ratio is
best peer / troupe (how many times faster, or lighter, troupe is).

Every run's record is appended to target/compare/raw.jsonl; the generated block
is written to target/compare/table.md and, unless --no-write, between the
`<!-- compare:begin -->` / `<!-- compare:end -->` markers of BENCHMARKS.md.

Not part of CI: the peers' side alone takes minutes (--quick) to hours (full).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import importlib.metadata as md
import json
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import time

import compare_rounds as rounds
import compare_rust as rustp
import compare_serve
from compare_host import BEGIN, END, loadavg, machine, sh, write_benchmarks

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_FACTOR = 300
# The memory target is absolute, not a ratio: 100,000 idle agents in
# under 256 MiB.
IDLE_TARGET_KIB = 256 * 1024 / 100_000

WORKLOADS = ["rr", "sel", "swarm", "fan", "rpc", "pub", "chain", "fanin", "idle", "ckpt", "conc", "serve"]
# Workloads with tables of their own (compare_rounds.py, compare_serve.py), not the 300x table.
OWN_TABLES = ("ckpt", "conc", "serve")

# Sizes per workload. Full = every size in WORKLOADS.md; quick = the small ones
# (rpc/pub at 10,000 because the peers take ~0.3-0.5 ms per message).
FULL_SIZES = {
    "rr": [200, 2000, 10000],
    "sel": [200, 2000, 10000],
    "swarm": [200, 2000],
    "fan": [100, 1000, 10000],
    "rpc": [100000],
    "pub": [100000],
    "chain": [10],
    "fanin": [100, 1000, 10000],
    "idle": [100000],
    "ckpt": [200, 1000, 2000],
    # The peers run up to K=10,000 (minutes per process); 100,000 is troupe's alone.
    "conc": [1000, 10000, 100000],
    # K sessions: one alone (many turns), then bursts of one turn each.
    "serve": [1, 1000],
}
QUICK_SIZES = {
    "rr": [200],
    "sel": [200],
    "swarm": [200],
    "fan": [100],
    "rpc": [10000],
    "pub": [10000],
    "chain": [10],
    "fanin": [100],
    "idle": [10000],
    "ckpt": [200],
    "conc": [100],
    "serve": [1, 100],
}
# Graph runs per process (the peers' scripts count the cold run among them).
CHAIN_RUNS = 200
FANIN_RUNS = {100: 50, 1000: 10, 10000: 3}

# The figure each workload compares, and how it is shown.
UNITS = {
    "rr": ("time", "msg"),
    "sel": ("time", "msg"),
    "swarm": ("time", "msg"),
    "fan": ("time", "worker"),
    "rpc": ("time", "round trip"),
    "pub": ("time", "msg"),
    "chain": ("time", "superstep"),
    "fanin": ("time", "node"),
    "idle": ("mem", "agent"),
    "ckpt": ("time", "superstep"),
    "conc": ("ratio", "ideal"),
    "serve": ("rate", "s"),
}
# troupe's bench prints `unit`; it must mean the same as the peers' field.
TROUPE_UNITS = {
    "rr": "µs/message",
    "sel": "µs/message",
    "swarm": "µs/message",
    "fan": "µs/worker",
    "rpc": "µs/round trip",
    "pub": "µs/message",
    "chain": "µs/superstep",
    "fanin": "µs/node invocation",
    "idle": "KiB/agent",
    "ckpt": "µs/superstep overhead",
    "conc": "× ideal",
    "serve": "user turns/s",
}
WHAT = {
    "rr": "RoundRobin, 3 agents",
    "sel": "Selector, 4 agents",
    "swarm": "Swarm, 2 agents",
    "fan": "fan-out/fan-in, K workers (warm)",
    "rpc": "request/response, 2 agents",
    "pub": "publish to 1 subscriber",
    "chain": "graph chain of 10 nodes",
    "fanin": "graph fan-out/fan-in, K branches",
    "idle": "K idle agents hosted",
    "ckpt": "checkpoint after every superstep, 10-agent ring",
    "conc": "K concurrent 3-agent round robins at 20 ms a model call",
    "serve": "K sessions through a server's HTTP API, 3-agent team at 20 ms a model call",
}
PEER_PACKAGES = ["autogen-agentchat", "autogen-core", "autogen-ext", "agent-framework-core", "langgraph", "langchain-core"]


def pkg(name: str) -> str:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "?"


@dataclasses.dataclass
class Side:
    key: str  # identity of the command, for reuse within one invocation
    label: str
    argv: list[str]  # as run
    shown: str  # as shown in BENCHMARKS.md (relative paths)
    field: str
    cwd: str
    skip: str | None = None  # "not run" reason
    reused: bool = False  # the runs of the same command in an earlier row
    runs: list[dict] = dataclasses.field(default_factory=list)
    positive: bool = True  # the figure must be > 0 (ckpt's overhead may be <= 0 within noise)
    role: str = ""  # "baseline": a peer's no-checkpoint run (ckpt)
    baseline: str | None = None  # the key of this side's baseline (ckpt)
    rust: bool = False  # a Rust peer (benches/peers-rust), not a Python one

    def value(self, rec: dict) -> float | None:
        """The run's figure: this side's field of its JSON line, if a positive number."""
        v = rec.get("result", {}).get(self.field)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and (v > 0 or not self.positive):
            return float(v)
        return None

    def ok_values(self) -> list[float]:
        return [v for v in map(self.value, self.runs) if v is not None]

    def median(self) -> float | None:
        v = self.ok_values()
        return statistics.median(v) if v else None

    def rss(self) -> float | None:
        v = [r["result"]["peak_rss_mib"] for r in self.runs
             if self.value(r) is not None and isinstance(r["result"].get("peak_rss_mib"), (int, float))]
        return statistics.median(v) if v else None

    def status(self) -> str:
        """Why there is no figure, or '' if there is one."""
        if self.skip:
            return f"not run ({self.skip})"
        if self.median() is not None:
            return ""
        if not self.runs:
            return "not run"
        last = self.runs[-1]
        if last.get("timed_out"):
            return f"timed out (> {last['timeout_s']:.0f} s)"
        if last.get("rc") == 0 and "result" in last:
            return f"FAILED (no {self.field} in its output)"
        return f"FAILED (rc {last.get('rc')})"


@dataclasses.dataclass
class Row:
    workload: str
    size: int
    size_label: str
    troupe: Side
    peers: list[Side]
    note: str = ""
    extra: dict = dataclasses.field(default_factory=dict)


def size_label(workload: str, size: int) -> str:
    letter = {"rr": "N", "sel": "N", "swarm": "N", "rpc": "n", "pub": "n", "chain": "L", "ckpt": "N"}.get(workload, "K")
    s = f"{letter}={size:,}"
    if workload == "chain":
        s += f", {CHAIN_RUNS} runs"
    if workload == "fanin":
        s += f", {FANIN_RUNS.get(size, 3)} runs"
    return s


class Plan:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.bench = args.bench
        self.peers = args.peers_dir
        self.py = sys.executable
        self.sizes = {**(QUICK_SIZES if args.quick else FULL_SIZES), **args.sizes}
        self.cache: dict[str, Side] = {}
        self.lg_label = f"LangGraph {pkg('langgraph')}"
        self.maf_label = f"MAF {pkg('agent-framework-core')}"
        self.ag_label = f"AutoGen {pkg('autogen-agentchat')}"
        self.fsync = False
        self.rust_bin = args.rust_peers

    def troupe(self, workload: str, *flags: str | int) -> Side:
        # One thread, as each peer runs on one asyncio loop; a multi-thread
        # runtime only adds cross-thread wake-ups to these workloads, whose
        # agents do no work to spread (see BENCHMARKS.md).
        flags = (*flags, "--threads", 1)
        argv = [self.bench, workload, *map(str, flags)]
        shown = " ".join([os.path.relpath(self.bench, REPO), workload, *map(str, flags)])
        return Side(key=shown, label="troupe", argv=argv, shown=shown, field="figure", cwd=REPO)

    def peer(self, label: str, field: str, script: str, *flags: str | int, skip: str | None = None) -> Side:
        argv = [self.py, os.path.join(self.peers, script), *map(str, flags)]
        shown = " ".join(["python", script, *map(str, flags)])
        return Side(key=shown, label=label, argv=argv, shown=shown, field=field, cwd=self.peers, skip=skip)

    def rust(self, label: str, *argv, skip: str | None = None) -> Side:
        """A Rust peer's side: `rustpeers FRAMEWORK WORKLOAD FLAGS` (compare_rust.py)."""
        return Side(label=label, **rustp.side_fields(self.rust_bin, argv, skip))

    def rows(self, only: list[str] | None) -> list[Row]:
        ag = f"AutoGen {pkg('autogen-agentchat')}"
        core = f"AutoGen core {pkg('autogen-core')}"
        maf = f"MAF {pkg('agent-framework-core')}"
        lg = f"LangGraph {pkg('langgraph')}"
        out: list[Row] = []
        if (not only or "ckpt" in only) and self.sizes["ckpt"]:
            self.fsync = rounds.fsync_supported(self.bench)
        for w in WORKLOADS:
            if only and w not in only:
                continue
            for size in self.sizes[w]:
                if w in OWN_TABLES:
                    if w == "ckpt":
                        made = rounds.ckpt_rows(self, size, os.path.join(REPO, "target", "compare", "ckpt-work"), self.fsync)
                    elif w == "serve":
                        made = compare_serve.serve_rows(self, size, self.args.quick)
                    else:
                        made = rounds.conc_rows(self, size)
                    out += [Row(w, size, label, t, peers, note, extra) for label, t, peers, note, extra in made]
                    continue
                note = ""
                label = size_label(w, size)
                if w in ("rr", "sel", "swarm"):
                    script = {"rr": "autogen_roundrobin.py", "sel": "autogen_selector.py", "swarm": "autogen_swarm.py"}[w]
                    t = self.troupe(w, "--n", size, "--context", "buffered")
                    peers = [self.peer(f"{ag} (buffered)", "per_message_us", script, "--n", size, "--context", "buffered")]
                elif w == "fan":
                    t = self.troupe(w, "--k", size)
                    peers = [self.peer(f"{core} (send_message + gather)", "warm_per_worker_us",
                                       "autogen_fanout.py", "--k", size, "--mode", "rpc")]
                elif w in ("rpc", "pub"):
                    mode = "rpc" if w == "rpc" else "pubsub"
                    api = "send_message" if w == "rpc" else "publish_message"
                    t = self.troupe(w, "--n", size)
                    peers = [self.peer(f"{core} ({api})", "per_message_us",
                                       "autogen_core_throughput.py", "--mode", mode, "--n", size, "--budget-s", 600)]
                elif w == "chain":
                    t = self.troupe(w, "--runs", CHAIN_RUNS)
                    peers = [
                        self.peer(f"{lg} (invoke)", "per_superstep_us", "langgraph_chain.py",
                                  "--shape", "chain", "--length", size, "--runs", CHAIN_RUNS, "--api", "sync"),
                        self.peer(f"{lg} (ainvoke)", "per_superstep_us", "langgraph_chain.py",
                                  "--shape", "chain", "--length", size, "--runs", CHAIN_RUNS, "--api", "async"),
                        self.peer(maf, "per_superstep_us", "maf_workflow.py",
                                  "--shape", "chain", "--length", size, "--runs", CHAIN_RUNS),
                    ]
                elif w == "fanin":
                    runs = FANIN_RUNS.get(size, 3)
                    t = self.troupe(w, "--k", size, "--runs", runs)
                    peers = [
                        self.peer(maf, "per_invocation_us", "maf_workflow.py",
                                  "--shape", "fanout", "--k", size, "--runs", runs),
                        self.peer(f"{lg} (invoke)", "per_invocation_us", "langgraph_chain.py",
                                  "--shape", "fanout", "--k", size, "--runs", runs, "--api", "sync"),
                        self.peer(f"{lg} (ainvoke)", "per_invocation_us", "langgraph_chain.py",
                                  "--shape", "fanout", "--k", size, "--runs", runs, "--api", "async"),
                    ]
                    if size > 1000:
                        note = ("the peers' RESULTS.md stops at K=1,000; here they run at K=10,000 too, 3 runs per process "
                                "(~30 s a process: MAF builds the graph in ~13 s)")
                elif w == "idle":
                    # The peers have no idle-hosting script: their figure is autogen-core's
                    # RSS per agent instance after a cold fan-out to K instances, at the
                    # largest K of this mode's fan workload (reused if the fan rows ran).
                    peer_k = max(self.sizes["fan"])
                    t = self.troupe(w, "--k", size)
                    peers = [self.peer(f"{core} (K instances, RSS after a cold fan-out)", "rss_per_agent_kib",
                                       "autogen_fanout.py", "--k", peer_k, "--mode", "rpc")]
                    label = f"{size_label(w, size)} (AutoGen K={peer_k:,})"
                    note = (f"troupe hosts K={size:,} agents that wait; the peer figure is autogen-core's RSS growth "
                            f"per agent instance after a cold fan-out to K={peer_k:,} instances (no idle-hosting script); "
                            "AutoAgents' agents each have their ractor actor spawned, troupe's not until they first have work")
                else:
                    raise AssertionError(w)
                peers += rustp.sides(self, w, size, CHAIN_RUNS if w == "chain" else FANIN_RUNS.get(size, 3))
                out.append(Row(w, size, label, t, peers, note))
        return out


# ------------------------------------------------------------------ running

def peer_env() -> dict[str, str]:
    env = dict(os.environ)
    # Nothing may trace to LangSmith or print warnings into the timing.
    for k in ("LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING", "LANGCHAIN_API_KEY", "LANGSMITH_API_KEY"):
        env.pop(k, None)
    env["PYTHONWARNINGS"] = "ignore"
    return env


def run_once(side: Side, timeout: float, raw, ctx: dict) -> dict:
    """Runs one process; the record keeps its JSON line (`result`) or why there is none (`error`)."""
    t0 = time.time()
    rec: dict = {**ctx, "side": side.label, "cmd": side.shown, "ts": round(t0, 3), "timeout_s": timeout}
    proc = subprocess.Popen(side.argv, cwd=side.cwd, env=peer_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        rec["rc"] = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rec["rc"] = None
        rec["timed_out"] = True
    rec["process_wall_s"] = round(time.time() - t0, 3)
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if rec["rc"] == 0 and len(lines) == 1:
        try:
            rec["result"] = json.loads(lines[0])
            if side.value(rec) is None:
                rec["error"] = f"field {side.field!r} missing or not a positive number: {rec['result'].get(side.field)!r}"
        except json.JSONDecodeError as e:
            rec["error"] = f"bad JSON line: {e}"
    elif rec["rc"] == 0:
        rec["error"] = f"expected one JSON line on stdout, got {len(lines)}: " + out[-1500:]
    if "result" not in rec and "error" not in rec:
        rec["error"] = "timed out" if rec.get("timed_out") else (out[-1500:] + "\n" + err[-2500:]).strip()
    raw.write(json.dumps(rec, sort_keys=True, ensure_ascii=False) + "\n")
    raw.flush()
    return rec


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def measure(rows: list[Row], pairs: int, timeout: float, raw, run_id: str) -> None:
    done: dict[str, Side] = {}
    for row in rows:
        # A peer command already measured in this invocation (idle reuses fan) is not rerun.
        for i, p in enumerate(row.peers):
            if p.key in done and not p.skip:
                prev = done[p.key]
                row.peers[i] = dataclasses.replace(p, runs=prev.runs, reused=True)
        sides = [row.troupe] + [p for p in row.peers if not p.skip and not p.reused]
        for pair in range(pairs):
            for side in sides:
                if any(r.get("timed_out") for r in side.runs):
                    continue  # one timeout is enough: do not spend the budget again
                ctx = {"run_id": run_id, "workload": row.workload, "size": row.size, "pair": pair}
                rec = run_once(side, timeout, raw, ctx)
                side.runs.append(rec)
                v = side.value(rec)
                what = (f"{side.field}={v:.4g}" if v is not None
                        else ("TIMEOUT" if rec.get("timed_out") else "FAILED: " + rec.get("error", "")[-300:].replace("\n", " | ")))
                log(f"{row.workload} {row.size_label} pair {pair + 1}/{pairs} {side.label}: {what} ({rec['process_wall_s']:.1f} s)")
        for side in sides:
            done[side.key] = side
        if row.troupe.median() is not None:
            unit = next((r["result"].get("unit") for r in row.troupe.runs if "result" in r), None)
            if unit and unit != TROUPE_UNITS[row.workload]:
                row.note = (row.note + "; " if row.note else "") + f"troupe's bench reports unit {unit!r}"


# ------------------------------------------------------------------ rendering

def fmt(workload: str, value: float) -> str:
    kind, per = UNITS[workload]
    if kind == "mem":
        return f"{value:.3g} KiB/{per}"
    if kind == "ratio":
        return f"{value:.3g}× {per}"
    if kind == "rate":
        return f"{value:,.0f} user turns/{per}"
    if value >= 1000:
        return f"{value / 1000:.3g} ms/{per}"
    return f"{value:.3g} µs/{per}"


def fmt_ratio(r: float) -> str:
    if r < 1:
        return f"{r:.3g}× (troupe {1 / r:.3g}× slower)"
    return f"{r:,.0f}×" if r >= 100 else f"{r:.3g}×"


def runs_note(side: Side) -> str:
    ok, n = len(side.ok_values()), len(side.runs)
    return "" if ok == n else f" ({ok}/{n} runs ok)"


def table(rows: list[Row]) -> list[str]:
    out = [
        f"| workload | size | troupe | best peer | ratio | best Python peer | {TARGET_FACTOR}× target | meets |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        w = row.workload
        tm = row.troupe.median()
        troupe = fmt(w, tm) + runs_note(row.troupe) if tm is not None else row.troupe.status()
        ok = [p for p in row.peers if p.median() is not None]
        # The best peer of all (Rust ones included); the 300x target stays on the best Python peer.
        best = min(ok, key=lambda p: p.median()) if ok else None
        py = min((p for p in ok if not p.rust), key=lambda p: p.median(), default=None)
        if best is None:
            why = "; ".join(f"{p.label}: {p.status()}" for p in row.peers)
            bp, ratio = f"none ({why})", "—"
        else:
            bp = f"{best.label}: {fmt(w, best.median())}{runs_note(best)}"
            ratio = "—" if tm is None else fmt_ratio(best.median() / tm)
        if py is None:
            pyp, target, meets = "none", "—", "—"
        else:
            pm = py.median()
            pyp = "the same" if py is best else f"{py.label}: {fmt(w, pm)}{runs_note(py)}"
            goal = IDLE_TARGET_KIB if w == "idle" else pm / TARGET_FACTOR
            target = fmt(w, goal)
            meets = "—" if tm is None else ("✓" if tm <= goal else "✗")
        out.append(f"| {w} — {WHAT[w]} | {row.size_label} | {troupe} | {bp} | {ratio} | {pyp} | {target} | {meets} |")
    return out


def details(rows: list[Row]) -> list[str]:
    out = []
    for row in rows:
        w = row.workload
        out.append(f"- **{w}, {row.size_label}**" + (f" — {row.note}" if row.note else ""))
        for side in [row.troupe] + row.peers:
            m = side.median()
            if m is None:
                head = side.status()
                err = next((r.get("error", "") for r in reversed(side.runs) if "error" in r), "")
                if err and not side.skip:
                    head += ": " + " ".join(err.split())[-200:]
            else:
                vals = ", ".join(f"{v:.4g}" for v in side.ok_values())
                rss = side.rss()
                head = f"{fmt(w, m)}{runs_note(side)} (runs: {vals}" + (f"; peak RSS {rss:.0f} MiB" if rss else "") + ")"
            if side.reused:
                head += "; the same processes as in a row above"
            out.append(f"  - {side.label}: {head} — `{side.shown}`")
    return out


def block(rows: list[Row], args: argparse.Namespace, started: dt.datetime, took: float, load0: str) -> str:
    commit = sh(["git", "rev-parse", "--short", "HEAD"]) or "?"
    dirty = sh(["git", "status", "--porcelain", "--untracked-files=no"])
    troupe_ver = next((r["result"].get("version") for row in rows for r in row.troupe.runs if "result" in r), "?")
    threads = next((r["result"].get("threads") for row in rows for r in row.troupe.runs if "result" in r), "?")
    peers = ", ".join(f"{p} {pkg(p)}" for p in PEER_PACKAGES)
    mode = "quick (small sizes only)" if args.quick else "full (every size in WORKLOADS.md)"
    if args.only:
        mode += f", only `{','.join(args.only)}`"
    if args.sizes:
        mode += ", sizes " + "; ".join(f"{w}={','.join(map(str, v))}" for w, v in args.sizes.items())
    lines = [
        BEGIN,
        "<!-- Generated by benches/compare.sh; rerun it rather than editing this block. -->",
        "",
        f"- **Date:** {started.strftime('%Y-%m-%d %H:%M')} UTC; the comparison took {took / 60:.1f} min.",
        f"- **Command:** `{args.invoked_as}`, from the project root — {mode}; {args.pairs} alternating "
        f"pair{'s' if args.pairs != 1 else ''}, medians.",
        f"- **Machine:** {machine()}; load average {load0} at the start, {loadavg()} at the end.",
        f"- **troupe:** {troupe_ver} at commit {commit}{' with uncommitted changes' if dirty else ''}; "
        f"{sh(['rustc', '--version'])}; `{os.path.relpath(args.bench, REPO)}` on a tokio "
        f"{'current-thread runtime' if threads == 1 else f'multi-thread runtime with {threads} workers'}.",
        f"- **Peers:** CPython {platform.python_version()}; {peers}; a venv built from "
        f"`../shared/bench/peers/requirements.lock.txt` (and `ckpt/venv-freeze.txt`: langgraph-checkpoint-sqlite); scripts from `../shared/bench/peers/`.",
        rustp.header(args),
        "- **Method:** one process per run; for each workload and size, troupe then every peer, repeated "
        f"{args.pairs} times (A B A B); each side's figure is the median of its runs. Best peer = lowest "
        "median of every peer, Rust and Python; ratio = best peer / troupe (how many times faster, or lighter for "
        "`idle`, troupe is; under 1, the peer is faster). "
        f"{TARGET_FACTOR}× target = best Python peer / {TARGET_FACTOR} (for `idle`, the absolute goal of 100,000 "
        "agents in 256 MiB: 2.62 KiB/agent); ✓ when troupe's median is at or under it. "
        "Every model is scripted and every node a plain function, so the figures are orchestration "
        "overhead only. Raw records: `target/compare/raw.jsonl`.",
        "",
        *(table(shared) + [""] if (shared := [r for r in rows if r.workload not in OWN_TABLES]) else []),
        *rounds.own_tables(rows, WHAT, args.fsync),
        *compare_serve.serve_table(rows),
        "Each side's median, its runs and the exact command (troupe's and the Rust peers' from the project root, "
        "the Python peers' from `../shared/bench/peers` with the venv's `python`):",
        "",
        *details(rows),
        "",
        "Reproduce: `benches/compare.sh --quick` (small sizes, a few minutes) or `benches/compare.sh` "
        "(every size; long: the peers need minutes per size at N=10,000 and n=100,000). "
        "`--only <workload>[,<workload>...]` runs some workloads, `--sizes conc=1000` chooses a workload's sizes, "
        "`--pairs N` changes the number of pairs, `--no-rust-peers` leaves the Rust peers out, "
        "`--no-write` prints the table without touching this file.",
        END,
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes only (a few minutes)")
    ap.add_argument("--only", type=lambda v: [w.strip() for w in v.split(",") if w.strip()],
                    help="workloads, comma-separated (the block written holds only those; add --no-write to keep the old one)")
    ap.add_argument("--sizes", action="append", default=[],
                    help="WORKLOAD=N[,N...] (repeatable, or ';'-separated; default from $COMPARE_SIZES), e.g. "
                         "'conc=1000' to skip the peers' K=10,000 (minutes each); an empty list skips the workload")
    ap.add_argument("--pairs", type=int, default=3, help="alternating troupe/peer rounds (default 3)")
    ap.add_argument("--no-write", action="store_true", help="print the table; leave BENCHMARKS.md alone")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per process (default 120 quick, 1800 full); a timed-out side is not rerun")
    ap.add_argument("--bench", default=os.path.join(REPO, "target", "dist", "examples", "bench"))
    ap.add_argument("--peers-dir", default=os.path.join(os.path.dirname(REPO), "shared", "bench", "peers"))
    ap.add_argument("--benchmarks", default=os.path.join(REPO, "BENCHMARKS.md"))
    ap.add_argument("--rust-peers", default="",
                    help="the Rust peers' binary (benches/peers-rust, built by compare.sh); empty: not run")
    ap.add_argument("--invoked-as", default="benches/compare.py " + " ".join(map(shlex.quote, sys.argv[1:])))
    args = ap.parse_args()
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    bad = [w for w in args.only or [] if w not in WORKLOADS]
    if bad:
        ap.error(f"--only {','.join(bad)}: not one of {', '.join(WORKLOADS)}")
    try:
        args.sizes = rounds.parse_sizes(args.sizes or [os.environ.get("COMPARE_SIZES", "")], WORKLOADS)
    except ValueError as e:
        ap.error(str(e))
    timeout = args.timeout or (120.0 if args.quick else 1800.0)
    for p, what in ((args.bench, "troupe's bench binary"), (args.peers_dir, "the peers' directory")):
        if not os.path.exists(p):
            print(f"compare.py: {what} not found at {p}", file=sys.stderr)
            return 2
    args.peers_dir = os.path.abspath(args.peers_dir)

    out_dir = os.path.join(REPO, "target", "compare")
    os.makedirs(out_dir, exist_ok=True)
    started = dt.datetime.now(dt.timezone.utc)
    run_id = started.strftime("%Y%m%dT%H%M%SZ")
    load0 = loadavg()
    t0 = time.monotonic()
    plan = Plan(args)
    rows = plan.rows(args.only)
    args.fsync = plan.fsync
    with open(os.path.join(out_dir, "raw.jsonl"), "a", encoding="utf-8") as raw:
        measure(rows, args.pairs, timeout, raw, run_id)
    took = time.monotonic() - t0

    text = block(rows, args, started, took, load0)
    with open(os.path.join(out_dir, "table.md"), "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(text)
    if not args.no_write:
        write_benchmarks(args.benchmarks, text)
        log(f"wrote the table into {os.path.abspath(args.benchmarks)}")
    log(f"done in {took / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
