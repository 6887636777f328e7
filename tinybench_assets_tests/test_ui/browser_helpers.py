"""Helpers of the browser test (test_browser.py): the webserver's GraphQL API and the expected asset graph,
Chromium's availability, the isolated store's environment and Dagster instance, the process group's stop, and the
page scripts and matching that read the asset graph (node boxes, edges) off the page's SVG."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import urllib.request
from pathlib import Path

import yaml

from tinybench_assets import paths

CHROMIUM = os.environ.get("TINYBENCH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1600, "height": 1200}


# --------------------------------------------------------------------------------------------- process and page helpers
def screenshot_dir() -> Path:
    d = Path(os.environ.get("TINYBENCH_SCREENSHOTS") or paths.PROJECT_ROOT / ".screenshots" / "ui")
    d.mkdir(parents=True, exist_ok=True)
    return d


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(base: str, query: str, variables: dict | None = None, timeout: float = 30) -> dict:
    req = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": query, "variables": variables or {}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        out = json.loads(resp.read())
    if out.get("errors"):
        raise AssertionError(f"GraphQL errors: {out['errors']}")
    return out["data"]


def chromium_problem() -> str | None:
    """Why Chromium cannot be used here, or None."""
    if not Path(CHROMIUM).exists():
        return (
            f"{CHROMIUM} not found: install Debian's chromium package (scripts/env.sh does it with apt-get when "
            f"run as root; it prints why when it cannot)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as e:
        return f"the playwright Python package is missing ({e}); it is in the dev extra: pip install -e '.[dev]'"
    try:
        out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{CHROMIUM} --version failed: {e}"
    if out.returncode != 0:
        return f"{CHROMIUM} --version exited {out.returncode}: {out.stderr.strip()[-500:]}"
    return None


def isolated_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DAGSTER_HOME": str(root / "dagster_home"),
            "TINYBENCH_DUCKDB": str(root / "tinybench.duckdb"),
            "TINYBENCH_INCOMING": str(root / "incoming"),
            "TINYBENCH_QUARANTINE": str(root / "quarantine"),
            "TINYBENCH_ARTIFACTS": str(root / "artifacts"),
            "TINYBENCH_DEFAULT_DATA": paths.default_data_dir(),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "OMP_NUM_THREADS": "1",
        }
    )
    return env


def write_instance_yaml(home: Path) -> None:
    """The project's dagster.yaml, but runs launched from the UI start at once (DefaultRunCoordinator): the test
    runs no daemon, which the QueuedRunCoordinator behind ``concurrency.runs`` would need to dequeue them."""
    cfg = yaml.safe_load((paths.PROJECT_ROOT / "dagster.yaml.template").read_text()) or {}
    cfg.get("concurrency", {}).pop("runs", None)
    cfg["run_coordinator"] = {"module": "dagster.core.run_coordinator", "class": "DefaultRunCoordinator"}
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(cfg))


def kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the webserver's process group (webserver, code server, run workers), then SIGKILL what is left."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # children outliving the leader
    except ProcessLookupError:
        pass
    if proc.poll() is None:
        proc.wait(timeout=10)


# --------------------------------------------------------------------------------------------- expectations and graph matching
EXPECT_QUERY = """
{ assetNodes {
    assetKey { path } groupName isPartitioned dependencyKeys { path }
    assetChecksOrError { ... on AssetChecks { checks { name executionForLatestMaterialization { status } } } }
} }
"""

ASSET_QUERY = """
query ($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) { ... on AssetNode {
    partitionKeys
    assetMaterializations(limit: 1) { partition metadataEntries { label __typename ... on MarkdownMetadataEntry { mdStr } } }
} } }
"""

RUNS_QUERY = """
{ runsOrError(limit: 20) { ... on Runs { results { runId status tags { key value } assetSelection { path } } } } }
"""

GRAPH_JS = """
() => {
  const svg = document.querySelector('svg[class*=svgContainer]');
  if (!svg) return null;
  const nodes = [], edges = [];
  for (const fo of svg.querySelectorAll('foreignObject')) {
    const el = fo.querySelector('[class*=assetName]');
    if (!el) continue;
    nodes.push({name: el.textContent.trim(), x: +fo.getAttribute('x'), y: +fo.getAttribute('y'),
                w: +fo.getAttribute('width'), h: +fo.getAttribute('height')});
  }
  for (const p of svg.querySelectorAll('path[marker-end]')) {
    const n = (p.getAttribute('d') || '').match(/-?[0-9.]+/g);
    if (n && n.length >= 4) edges.push({x1: +n[0], y1: +n[1], x2: +n[n.length - 2], y2: +n[n.length - 1]});
  }
  return {nodes, edges};
}
"""


GRAPH_BOX_JS = """
() => {
  const rects = [...document.querySelectorAll('svg[class*=svgContainer] foreignObject')].map(e => e.getBoundingClientRect());
  const x = Math.max(0, Math.min(...rects.map(r => r.left)) - 16), y = Math.max(0, Math.min(...rects.map(r => r.top)) - 16);
  const r = Math.min(window.innerWidth, Math.max(...rects.map(r => r.right)) + 16);
  const b = Math.min(window.innerHeight, Math.max(...rects.map(r => r.bottom)) + 16);
  return {x, y, width: r - x, height: b - y};
}
"""


def asset_name(path: list[str]) -> str:
    return "/".join(path)


def match_label(label: str, names: set[str]) -> str | None:
    """The asset a graph label stands for: the UI middle-truncates long names (``binariz…_responses``)."""
    if label in names:
        return label
    if "…" in label:
        pre, suf = label.split("…", 1)
        hits = [n for n in names if n.startswith(pre) and n.endswith(suf) and len(n) > len(pre) + len(suf)]
        if len(hits) == 1:
            return hits[0]
    return None


def graph_from_dom(dom: dict, names: set[str]) -> tuple[dict[str, dict], set[tuple[str, str]], list]:
    """Nodes by asset name, and edges as (upstream, downstream): an edge leaves the middle of its source box's
    right side and ends (arrow head) just left of the middle of its target box's left side."""
    boxes = {}
    for n in dom["nodes"]:
        full = match_label(n["name"], names)
        assert full is not None, f"graph label {n['name']!r} matches no single asset of {sorted(names)}"
        boxes[full] = n
    edges, unmatched = set(), []
    for e in dom["edges"]:
        src = [
            k
            for k, b in boxes.items()
            if abs(b["x"] + b["w"] - e["x1"]) <= 2 and abs(b["y"] + b["h"] / 2 - e["y1"]) <= 2
        ]
        dst = [k for k, b in boxes.items() if 0 <= b["x"] - e["x2"] <= 12 and abs(b["y"] + b["h"] / 2 - e["y2"]) <= 2]
        if len(src) == 1 and len(dst) == 1:
            edges.add((src[0], dst[0]))
        else:
            unmatched.append(e)
    return boxes, edges, unmatched
