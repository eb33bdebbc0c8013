#!/usr/bin/env python3
"""Two builds of troupe's bench side by side: before and after a change.

    benches/ab.py OLD_BENCH NEW_BENCH [--pairs 7] [--only rr,chain,...]

OLD_BENCH and NEW_BENCH are `bench` binaries (`cargo build --release --example bench`,
one per commit, copied aside). Each workload runs OLD and NEW in turn (old, new, new,
old, ...) on the current-thread runtime, and the line printed per workload gives both
medians and the median of the pairs' new/old ratios with its min and max: a ratio whose
range spans 1.0 is noise. Not part of CI.
"""
import argparse
import json
import statistics
import subprocess

CASES = [
    ("rr", ["--n", "2000"]), ("sel", ["--n", "2000"]), ("swarm", ["--n", "2000"]),
    ("fan", ["--k", "1000"]), ("rpc", ["--n", "100000"]), ("pub", ["--n", "100000"]),
    ("chain", ["--runs", "2000"]), ("fanin", ["--k", "100", "--runs", "50"]),
    ("fanin", ["--k", "1000", "--runs", "20"]), ("fanin", ["--k", "10000", "--runs", "3"]),
    ("idle", ["--k", "100000"]),
    ("ckpt", ["--store", "memory", "--n", "200", "--reps", "3"]),
    ("ckpt", ["--store", "sqlite", "--n", "200", "--reps", "3"]),
    ("conc", ["--k", "1000"]), ("conc", ["--k", "10000"]),
]


def figure(binary, workload, args):
    out = subprocess.run([binary, workload, *args, "--threads", "1"],
                         capture_output=True, text=True, timeout=300, check=True)
    row = json.loads([l for l in out.stdout.splitlines() if l.startswith("{")][-1])
    return row["figure"], row["unit"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    for workload, args in CASES:
        if only and workload not in only:
            continue
        res = {"old": [], "new": []}
        unit = ""
        for i in range(a.pairs):
            order = (("new", a.new), ("old", a.old)) if i % 2 else (("old", a.old), ("new", a.new))
            for tag, binary in order:
                value, unit = figure(binary, workload, args)
                res[tag].append(value)
        ratios = [n / o for n, o in zip(res["new"], res["old"])]
        print(f"{workload} {' '.join(args)}: before {statistics.median(res['old']):.3f} "
              f"after {statistics.median(res['new']):.3f} {unit}  after/before median of pairs "
              f"{statistics.median(ratios):.3f}  (min {min(ratios):.3f} max {max(ratios):.3f})",
              flush=True)


if __name__ == "__main__":
    main()
