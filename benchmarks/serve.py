"""tinybench serve's routing decisions, measured (issue 60): one command, figures printed and written as JSON.

    .venv/bin/python benchmarks/serve.py            # writes benchmarks/results/serve.json; ~1 min

Needs the real routers (run the main job first: ``bash scripts/run_main.sh``). ``tinybench serve`` runs as a child
process (tinybench_assets/testing/serve_process.py: a free loopback port, stopped by its pid) on the project's
artifacts, without upstreams; the client is this process (httpx2), on the same machine. Every request is
``POST /v1/route`` for ``router:routellm/mmlu`` (RouteLLM's MMLU router, trained on the static encoder) with a real
MMLU question drawn (seeded) from ``../shared/data/routellm/mmlu.csv``:

* ``single_p50_ms``: one client, one request after the other (``--single`` requests after a warm-up): the median
  time from sending a request to reading its decision (bar: under 15 ms);
* ``decisions_per_s``, ``p50_ms``, ``p95_ms``: ``concurrency`` (32) clients at once, each sending its next request when
  its last is answered, ``--requests`` in all: decisions per second of wall time and the requests' latency
  percentiles (bars: at least 300 decisions/s, p95 under 250 ms);
* ``equal_to_cli``: ``/v1/route`` gives, for ``--compare`` questions, what ``tinybench route --json`` prints for
  them (a subprocess, one file): the same chosen model and every model's P(correct) to 1e-9.

The JSON holds exactly those six keys (the issue's contract); when, where and at which commit it ran is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np
import pandas as pd
from meta import run_meta

from tinybench_assets import paths
from tinybench_assets.testing.serve_process import ServeProcess

ROUTER = "router:routellm/mmlu"


def questions(n: int, seed: int = 0) -> list[str]:
    df = pd.read_csv(Path(paths.default_data_dir()) / "routellm" / "mmlu.csv")
    return df["prompt"].drop_duplicates().sample(n, random_state=seed).tolist()


def single(url: str, texts: list[str]) -> list[float]:
    import httpx2

    out = []
    with httpx2.Client(base_url=url, timeout=30) as c:
        for t in texts:
            t0 = time.perf_counter()
            r = c.post("/v1/route", json={"model": ROUTER, "question": t})
            out.append(time.perf_counter() - t0)
            r.raise_for_status()
    return out


async def concurrent(url: str, texts: list[str], clients: int, total: int) -> tuple[float, list[float]]:
    import httpx2

    lat: list[float] = []
    todo = iter(range(total))

    async def client(c):
        for i in todo:
            t0 = time.perf_counter()
            r = await c.post("/v1/route", json={"model": ROUTER, "question": texts[i % len(texts)]})
            lat.append(time.perf_counter() - t0)
            r.raise_for_status()

    limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx2.AsyncClient(base_url=url, timeout=60, limits=limits) as c:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(c) for _ in range(clients)))
        wall = time.perf_counter() - t0
    return wall, lat


def equal_to_cli(url: str, texts: list[str], work: Path) -> tuple[bool, str]:
    import httpx2

    f = work / "compare.csv"
    pd.DataFrame({"question": texts}).to_csv(f, index=False)
    cmd = [sys.executable, "-m", "tinybench_assets.cli", "route", "--leaderboard", "routellm", "--scenario", "mmlu"]
    cli = subprocess.run(
        [*cmd, "--questions", str(f), "--json", "--threads", "1"], capture_output=True, text=True, cwd=ROOT
    )
    if cli.returncode != 0:
        return False, f"tinybench route failed: {cli.stderr.strip()[-300:]}"
    want = json.loads(cli.stdout)
    worst = 0.0
    with httpx2.Client(base_url=url, timeout=30) as c:
        for w, t in zip(want, texts):
            got = c.post("/v1/route", json={"model": ROUTER, "question": t}).json()
            if got["chosen_model"] != w["chosen_model"] or list(got["p"]) != list(w["p"]):
                return False, f"question {w['id']}: {got['chosen_model']} against the CLI's {w['chosen_model']}"
            worst = max(worst, max(abs(got["p"][m] - p) for m, p in w["p"].items()))
    return worst <= 1e-9, f"{len(want)} questions, largest P difference {worst:.2g}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "serve.json"), help="output JSON")
    ap.add_argument("--single", type=int, default=300, help="requests of the one client (default 300)")
    ap.add_argument("--requests", type=int, default=3000, help="requests of the concurrent clients (default 3000)")
    ap.add_argument("--concurrency", type=int, default=32, help="clients at once (default 32)")
    ap.add_argument("--compare", type=int, default=100, help="questions compared with tinybench route (default 100)")
    args = ap.parse_args(argv)
    router = Path(paths.artifacts_dir()) / "routellm" / "router_mmlu.npz"
    if not router.is_file():
        print(f"no router at {router}: run the main job first (bash scripts/run_main.sh)", file=sys.stderr)
        return 2
    texts = questions(1000)
    meta = run_meta()
    with tempfile.TemporaryDirectory(prefix="tb-serve-bench-") as tmp:
        server = ServeProcess(["--preload", ROUTER], dict(os.environ), Path(tmp) / "serve.log")
        t0 = time.perf_counter()
        with server:
            start_s = time.perf_counter() - t0
            print(f"server up in {start_s:.1f} s ({ROUTER} preloaded): {server.url}", flush=True)
            single(server.url, texts[:30])  # warm-up
            one = single(server.url, texts[: args.single])
            wall, lat = asyncio.run(concurrent(server.url, texts, args.concurrency, args.requests))
            same, note = equal_to_cli(server.url, texts[-args.compare :], Path(tmp))
    out = {
        "single_p50_ms": round(1000 * float(np.median(one)), 3),
        "decisions_per_s": round(args.requests / wall, 1),
        "p50_ms": round(1000 * float(np.percentile(lat, 50)), 3),
        "p95_ms": round(1000 * float(np.percentile(lat, 95)), 3),
        "concurrency": int(args.concurrency),
        "equal_to_cli": bool(same),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    print(f"equal to tinybench route: {note}")
    print(f"measured {meta['date']} at {meta['commit']} on {meta['machine']}; load average {os.getloadavg()}")
    bars = [
        ("one client p50 < 15 ms", out["single_p50_ms"] < 15),
        (f"{args.concurrency} clients >= 300 decisions/s", out["decisions_per_s"] >= 300),
        (f"{args.concurrency} clients p95 < 250 ms", out["p95_ms"] < 250),
        ("equal to tinybench route --json", same),
    ]
    for what, ok in bars:
        print(f"  {'met' if ok else 'NOT MET'}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
