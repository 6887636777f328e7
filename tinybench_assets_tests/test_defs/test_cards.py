"""What the UI shows before an asset is opened: groups that read as the pipeline, a title, a description, owners;
and definitions that load fast (heavy imports stay inside the asset functions)."""

import os
import subprocess
import sys
import time

from tinybench_assets.defs.cards import card, owners

PIPELINE_GROUPS = {"ingest", "irt", "estimation", "router", "magi", "evaluations"}


def test_every_asset_has_group_title_description_and_owner():
    from tinybench_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    keys = list(graph.get_all_asset_keys())
    assert len(keys) >= 15
    seen_groups = set()
    for key in keys:
        node = graph.get(key)
        seen_groups.add(node.group_name)
        assert node.group_name in PIPELINE_GROUPS, f"{key}: group {node.group_name!r}"
        desc = node.description or ""
        assert len(desc) > 60, f"{key}: description too short: {desc!r}"
        title = node.metadata.get("title")
        assert title, f"{key}: no title metadata"
        assert desc.startswith(f"**{getattr(title, 'value', title)}.**"), (
            f"{key}: description does not lead with its title"
        )
        assert node.owners, f"{key}: no owners"
    assert seen_groups == PIPELINE_GROUPS


def test_card_owners_from_environment(monkeypatch):
    monkeypatch.setenv("TINYBENCH_OWNERS", "team:evals, ana@example.org")
    assert owners() == ["team:evals", "ana@example.org"]
    assert card("T", "text")["owners"] == ["team:evals", "ana@example.org"]
    monkeypatch.delenv("TINYBENCH_OWNERS")
    assert owners() == ["team:evaluation"]


def test_definitions_load_fast_without_torch():
    """The UI, the sensor daemon and every run worker load the definitions: under 5 s, and torch /
    sentence-transformers / scikit-learn / matplotlib / optuna / scipy are not imported until an asset runs (nor by
    the summary that `tinybench summary` and run-all print)."""
    code = (
        "import sys, time; t=time.perf_counter(); from tinybench_assets.definitions import defs; "
        "dt=time.perf_counter()-t; import tinybench_assets.io.reports; heavy=[m for m in ('torch','sentence_transformers','sklearn','matplotlib','optuna','scipy') "
        "if m in sys.modules]; print(f'{dt:.3f}', ','.join(heavy))"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    best = None
    for _ in range(2):  # the first run may pay for a cold disk cache
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        ).stdout.split()
        wall = time.perf_counter() - t0
        best = wall if best is None else min(best, wall)
        heavy = out[1] if len(out) > 1 else ""
        assert heavy == "", f"definitions import heavy modules at load: {heavy}"
    assert best < 5.0, f"definitions took {best:.1f}s to load (interpreter included)"
