"""The Rust peers of benches/compare.py (issue 44): which rows they join and how.

Their program is `benches/peers-rust/` (its own Cargo project, not a member of
troupe's workspace), built by `benches/compare.sh` into
`target/peers-rust/release/rustpeers`. It prints one JSON line per process with
the fields troupe's bench prints, so its sides are measured like the others:
alternating with troupe and the Python peers, one process per run.

| workload | Rust peers |
|---|---|
| chain | graph-flow 0.8.1 (`execute_session`; `FlowRunner` over in-memory storage), adk-graph 2.3.0 (`invoke`) |
| fanin | graph-flow 0.8.1 (`FanOutTask`), adk-graph 2.3.0 (up to K=1,000: quadratic in K, 12 GB at 10,000) |
| rr | ADK-Rust 2.3.0 (`LoopAgent` of 3 `LlmAgent`s; `IncludeContents::None` and its default), AutoAgents 0.4.0 (3 actor agents taking turns; no memory and a sliding window of 2) |
| fan | AutoAgents 0.4.0 (K function actor agents: a task cast to each, the K answers gathered) |
| pub | AutoAgents 0.4.0 (N tasks published to a topic with 1 subscribed function actor agent) |
| idle | AutoAgents 0.4.0 (K function actor agents, each a spawned ractor actor), at most K=10,000 |

No Rust peer runs sel, swarm, rpc, ckpt or conc: BENCHMARKS.md ("The
Rust peers") says what each framework offers and why these are left out.
"""

from __future__ import annotations

import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCK = os.path.join(REPO, "benches", "peers-rust", "Cargo.lock")
# adk-graph's fan-in clones the whole state per branch: ~28 s a run and 12 GB at K=10,000.
ADK_GRAPH_MAX_K = 1_000
# AutoAgents spawns a ractor actor per agent at once: K is capped as the Python peer's idle figure is.
AUTOAGENTS_IDLE_MAX_K = 10_000


def versions() -> dict[str, str]:
    """Package versions pinned in benches/peers-rust/Cargo.lock."""
    out: dict[str, str] = {}
    try:
        with open(LOCK, encoding="utf-8") as f:
            name = None
            for line in f:
                if line.startswith("name = "):
                    name = line.split('"')[1]
                elif line.startswith("version = ") and name:
                    out.setdefault(name, line.split('"')[1])
                    name = None
    except OSError:
        pass
    return out


def labels() -> dict[str, str]:
    v = versions()
    return {
        "gf": f"graph-flow {v.get('graph-flow', '?')}",
        "ag": f"adk-graph {v.get('adk-graph', '?')}",
        "adk": f"ADK-Rust {v.get('adk-agent', '?')}",
        "aa": f"AutoAgents {v.get('autoagents', '?')}",
    }


def sides(plan, workload: str, size: int, runs: int | None = None) -> list:
    """The Rust peers' sides of one row (none for workloads they do not run)."""
    lb = labels()
    rust = plan.rust
    if workload == "chain":
        return [
            rust(f"{lb['gf']} (execute_session)", "graph-flow", "chain", "--length", size, "--runs", runs),
            rust(f"{lb['gf']} (FlowRunner + in-memory storage)", "graph-flow", "chain", "--length", size,
                 "--runs", runs, "--api", "runner"),
            rust(f"{lb['ag']} (invoke)", "adk-graph", "chain", "--length", size, "--runs", runs),
        ]
    if workload == "fanin":
        skip = None if size <= ADK_GRAPH_MAX_K else f"up to K={ADK_GRAPH_MAX_K:,}: quadratic in K, 12 GB at 10,000"
        return [
            rust(f"{lb['gf']} (FanOutTask)", "graph-flow", "fanin", "--k", size, "--runs", runs),
            rust(f"{lb['ag']} (invoke)", "adk-graph", "fanin", "--k", size, "--runs", runs, skip=skip),
        ]
    if workload == "rr":
        return [
            rust(f"{lb['adk']} (LoopAgent of 3 LlmAgents, IncludeContents::None)", "adk", "rr", "--n", size,
                 "--context", "none"),
            rust(f"{lb['adk']} (LoopAgent, whole session history)", "adk", "rr", "--n", size, "--context", "default"),
            rust(f"{lb['aa']} (3 actor agents taking turns, no memory)", "autoagents", "rr", "--n", size),
            rust(f"{lb['aa']} (3 actor agents, sliding-window memory of 2)", "autoagents", "rr", "--n", size,
                 "--context", "window"),
        ]
    if workload == "fan":
        return [rust(f"{lb['aa']} (K function actor agents, K TaskCompletes gathered)", "autoagents", "fan",
                     "--k", size)]
    if workload == "pub":
        return [rust(f"{lb['aa']} (runtime.publish to a topic, 1 subscribed function actor agent)", "autoagents",
                     "pub", "--n", size)]
    if workload == "idle":
        k = min(size, AUTOAGENTS_IDLE_MAX_K)
        return [rust(f"{lb['aa']} (K={k:,} function actor agents, each a spawned ractor actor)", "autoagents",
                     "idle", "--k", k)]
    return []


def side_fields(bin_: str, argv: tuple, skip: str | None) -> dict:
    """The fields of a Rust peer's `Side` (but its label): one thread, as troupe runs."""
    path = bin_ or os.path.join(REPO, "target", "peers-rust", "release", "rustpeers")
    argv = [*map(str, argv), "--threads", "1"]
    shown = " ".join([os.path.relpath(path, REPO), *argv])
    skip = skip or (None if bin_ else "not built: --no-rust-peers")
    return {"key": shown, "argv": [path, *argv], "shown": shown, "field": "figure", "cwd": REPO, "skip": skip,
            "rust": True}


def header(args) -> str:
    """The block's line saying which Rust peers ran, from what."""
    if not args.rust_peers:
        return "- **Rust peers:** not run (`--no-rust-peers`, or no workload of theirs in `--only`)."
    v = versions()
    crates = ", ".join(f"{n} {v.get(n, '?')}" for n in
                       ("graph-flow", "adk-graph", "adk-agent", "adk-runner", "autoagents", "ractor", "tokio"))
    return (f"- **Rust peers:** {crates} (pinned in `benches/peers-rust/Cargo.lock`); "
            f"`{os.path.relpath(args.rust_peers, REPO)}`, built by compare.sh from `benches/peers-rust` "
            "(`--release`: fat LTO, one codegen unit, mimalloc, as troupe's `dist`) on a tokio current-thread runtime.")
