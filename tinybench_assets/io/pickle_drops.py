"""tinyBenchmarks pickle drops (``.pkl``, ``.pickle``): ``{"models": [...], "data": {subscenario:
{"correctness": items x models}}}``, optional ``"scenarios": {scenario: [subscenarios]}``.

Read into :class:`~tinybench_assets.io.drops.Drop`; errors are :class:`~tinybench_assets.io.drops.DropError`
naming the file, the subscenario and the row. ``read_drop`` in :mod:`tinybench_assets.io.drops` sends
pickles here.
"""
from __future__ import annotations

import pickle
import re
from pathlib import Path

import numpy as np
import pandas as pd

from .drops import Drop, DropError, clean_name, _dedupe


def tinybenchmarks_scenario(subscenario: str) -> str:
    """Map a tinyBenchmarks subscenario name to its scenario (``harness_hendrycksTest_x_5`` -> ``mmlu``)."""
    s = subscenario.lower()
    if "hendryckstest" in s or "mmlu" in s:
        return "mmlu"
    s = re.sub(r"^harness_", "", s)
    s = re.sub(r"_\d+$", "", s)
    if s.startswith("arc"):
        return "arc"
    if s.startswith("truthfulqa"):
        return "truthfulqa"
    return clean_name(s)


def read_tinybenchmarks(path: Path, leaderboard: str, sha: str) -> Drop:
    try:
        with open(path, "rb") as fh:
            obj = pickle.load(fh)  # noqa: S301 - landing files are the operator's own drops
    except Exception as exc:  # noqa: BLE001
        raise DropError(path, f"unreadable pickle ({type(exc).__name__}: {str(exc)[:200]})") from exc
    if not isinstance(obj, dict) or "models" not in obj or "data" not in obj:
        raise DropError(path, "unknown format: expected a dict with 'models' and 'data' (tinyBenchmarks layout)")
    models = [str(m) for m in obj["models"]]
    mapping = {}
    for scen, subs in (obj.get("scenarios") or {}).items():
        for sub in subs:
            mapping[sub] = clean_name(scen)
    frames, rules = [], {}
    for sub, block in obj["data"].items():
        if not isinstance(block, dict) or "correctness" not in block:
            raise DropError(path, f"subscenario {sub!r} lacks 'correctness'", column=str(sub))
        corr = np.asarray(block["correctness"], dtype=float)
        if corr.ndim != 2 or corr.shape[1] != len(models):
            raise DropError(path, f"subscenario {sub!r}: correctness has shape {corr.shape}, expected items x {len(models)} models", column=str(sub))
        if np.isnan(corr).any():
            r, _ = np.argwhere(np.isnan(corr))[0]
            raise DropError(path, f"subscenario {sub!r}: NaN correctness", row=int(r) + 1, column=str(sub))
        bad = (corr < 0) | (corr > 1)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise DropError(path, f"subscenario {sub!r}: score {float(corr[r, c])!r} for model {models[c]!r} outside [0, 1]", row=int(r) + 1, column=str(sub))
        scen = mapping.get(sub) or tinybenchmarks_scenario(sub)
        n_items = corr.shape[0]
        item_ids = np.array([f"{sub}.{j}" for j in range(n_items)], dtype=object)
        frames.append(
            pd.DataFrame(
                {
                    "leaderboard": leaderboard,
                    "scenario": scen,
                    "subscenario": str(sub),
                    "item": np.repeat(item_ids, len(models)),
                    "model": np.tile(np.asarray(models, dtype=object), n_items),
                    "score": corr.reshape(-1),
                }
            )
        )
        rules[scen] = "auto"
    drop = Drop(path=path, leaderboard=leaderboard, format="tinybenchmarks_pickle", sha256=sha, binarize_rules=rules)
    if frames:
        drop.responses = _dedupe(pd.concat(frames, ignore_index=True), path)
    return drop
