"""When, at which commit and on which machine a benchmark JSON was measured: its ``meta`` entry.

Every benchmark writes ``"meta": run_meta()`` into its JSON; ``benchmarks/report.py`` prints it beside each figure.
A JSON written without it (by an older script) is stamped after the fact::

    .venv/bin/python benchmarks/meta.py --stamp benchmarks/results/router.json --commit 7bfa377 --date 2026-11-26
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "tinybench_assets", "benchmarks"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> str:
    """One line: CPU model and cores, memory, Python and torch versions (GPU name when torch sees one)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        mem = f", {kib / 2**20:.0f} GiB"
    except (OSError, IndexError, ValueError):
        pass
    parts = [f"{os.cpu_count()} cores ({cpu}){mem}", f"Python {platform.python_version()}"]
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        parts.append(f"torch {torch.__version__}")
        if torch.cuda.is_available():
            parts.append(torch.cuda.get_device_name())
    return ", ".join(parts)


LIBRARIES = ("numpy", "scipy", "scikit-learn", "pandas", "torch", "dagster", "duckdb")


def libraries() -> dict:
    """{distribution: installed version} of the libraries whose version can move a figure (the same commit on a fresh
    install with a newer scikit-learn gave other KMeans anchor points, so other small-board figures)."""
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def run_meta() -> dict:
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"),
        "commit": _commit(),
        "machine": machine(),
        "libraries": libraries(),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stamp", required=True, type=Path, help="a benchmark JSON without a meta entry")
    ap.add_argument("--commit", required=True, help="the commit whose code produced it")
    ap.add_argument("--date", required=True, help="the day it was measured, YYYY-MM-DD")
    ap.add_argument("--machine", default=None, help="default: this machine")
    args = ap.parse_args(argv)
    data = json.loads(args.stamp.read_text())
    if "meta" in data:
        print(f"{args.stamp}: already has meta {data['meta']}", file=sys.stderr)
        return 1
    dt.date.fromisoformat(args.date)
    data["meta"] = {"date": args.date, "commit": args.commit, "machine": args.machine or machine()}
    args.stamp.write_text(json.dumps(data, indent=2))
    print(f"{args.stamp}: meta {data['meta']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
