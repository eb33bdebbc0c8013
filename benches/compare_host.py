"""Where benches/compare.py ran: the machine, its load, commands' output, and where its table goes."""

from __future__ import annotations

import os
import platform
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The generated block in BENCHMARKS.md, and the section it goes in when missing.
BEGIN = "<!-- compare:begin -->"
END = "<!-- compare:end -->"
SECTION = "## Side by side with the Python peers"


def sh(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def machine() -> str:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {mem}, {platform.system()} {platform.release()}"


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def write_benchmarks(path: str, text: str) -> None:
    """Puts `text` between BEGIN and END in BENCHMARKS.md (a new section near the top if missing)."""
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    if BEGIN in doc and END in doc and doc.index(BEGIN) < doc.index(END):
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        doc = head + text + tail
    else:
        section = f"{SECTION}\n\n{text}\n\n"
        # Near the top: before the first second-level section, after the introduction.
        i = doc.find("\n## ")
        doc = doc + "\n" + section if i < 0 else doc[: i + 1] + section + doc[i + 1 :]
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(doc)
    os.replace(tmp, path)
