"""A small board's tiny benchmark at every budget it prepared, and the choice of a budget.

A small board's predictor (estimation/small_board.py) prepares several anchor budgets n from one nested
stratified order per scenario (estimation/strata.py), so the anchors of n = 30 are the first 30 of n = 100's. The
export writes each budget's artifact to ``<folder>/budgets/n<N>/`` and, beside the main artifact, ``budgets.json``:

    {"leaderboard", "budgets": [{"n", "folder", "mae": {scenario: points}, "half_width": {scenario: points},
      "coverage": {scenario: share}, "worst_half_width": points}], "order": {scenario: [item ids]}}

with the leave-family-out backtest's error and 90 % half-width per scenario (each fold's interval calibrated on
the other folds). ``tinybench anchors --n N`` lists the first N items of every scenario's order (N up to its
pool; the prepared budgets' artifacts carry the same items); ``--target-width W`` picks the smallest prepared n
whose backtested half-width is at most W points in every scenario; ``tinybench estimate`` scores answers with the
largest prepared budget whose anchors they cover (:func:`budget_for_answers`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...atomic import atomic_write
from .files import save_artifact
from .format import JSON_FILE, ArtifactError

__all__ = [
    "BUDGETS_FILE",
    "save_budgets",
    "load_budgets",
    "target_budget",
    "prefix_items",
    "budget_for_answers",
    "budget_rows",
]

BUDGETS_FILE = "budgets.json"


def save_budgets(pred, leaderboard: str, folder, table, **export) -> Path:
    """Write every prepared budget's artifact under ``folder/budgets/n<N>/`` and ``folder/budgets.json``.

    pred : a fitted SmallBoardPredictor; table : its ``budget_table()`` (n, scenario, mae, half_width, coverage);
    export : ``to_artifact``'s keywords (item_texts, binarization). Returns the budgets file's path."""
    folder = Path(folder)
    entries = []
    for n in sorted(int(x) for x in pred.n_values):
        sub = Path("budgets") / f"n{n}"
        save_artifact(pred.to_artifact(leaderboard, n, **export), pred, folder / sub)
        t = table[table.n == n].set_index("scenario")
        entries.append(
            {
                "n": n,
                "folder": str(sub),
                "mae": {s: float(v) for s, v in t.mae.items()},
                "half_width": {s: float(v) for s, v in t.half_width.items()},
                "coverage": {s: float(v) for s, v in t.coverage.items()},
                "worst_half_width": float(t.half_width.max()),
            }
        )
    L = pred.layout_
    order = {
        s: [L.items[j] for j in L.cols[s][fit.order]] for s, fit in pred.served_.fits.items() if fit.order is not None
    }
    path = folder / BUDGETS_FILE
    text = json.dumps({"leaderboard": leaderboard, "budgets": entries, "order": order}, indent=1)
    atomic_write(path, lambda tmp: tmp.write_text(text))
    return path


def load_budgets(folder) -> dict | None:
    """``budgets.json`` of an artifact folder (or of a JSON file's folder), or None when it has none."""
    folder = Path(folder)
    path = (folder if folder.is_dir() else folder.parent) / BUDGETS_FILE
    if not path.is_file():
        return None
    try:
        d = json.loads(path.read_text())
        ns = [int(b["n"]) for b in d["budgets"]]
    except (ValueError, KeyError, TypeError) as e:
        raise ArtifactError(f"{path}: malformed budgets file ({e})") from None
    if not ns:
        raise ArtifactError(f"{path}: no budget listed")
    d["_folder"] = str(path.parent)
    return d


def target_budget(budgets: dict, width: float) -> dict:
    """The smallest prepared budget whose backtested 90 % half-width is at most ``width`` points in every scenario
    (ArtifactError naming the widths when none is)."""
    ok = [b for b in budgets["budgets"] if b["worst_half_width"] <= width]
    if not ok:
        have = ", ".join(f"n={b['n']}: {b['worst_half_width']:.1f}" for b in budgets["budgets"])
        raise ArtifactError(
            f"no prepared budget reaches a half-width of {width:g} points in every scenario "
            f"(widest scenario per budget: {have}); prepare larger budgets (the estimation assets' small_n_values config)"
        )
    return min(ok, key=lambda b: b["n"])


def prefix_items(budgets: dict, n: int) -> dict:
    """{scenario: the first n item ids of its nested order} (fewer where the pool is smaller)."""
    if not budgets.get("order"):
        raise ArtifactError("this tiny benchmark has no nested order: its budgets cannot be extended")
    return {s: list(items[: int(n)]) for s, items in budgets["order"].items()}


def budget_for_answers(budgets: dict, answered) -> Path | None:
    """The folder of the largest prepared budget whose anchors, in every scenario the answers touch, are all
    answered; None when no budget is covered."""
    answered = set(answered)
    for b in sorted(budgets["budgets"], key=lambda b: -b["n"]):
        folder = Path(budgets["_folder"]) / b["folder"]
        try:
            art = json.loads((folder / JSON_FILE).read_text())
        except (OSError, ValueError):
            continue
        touched = [s for s in art["scenario_order"] if answered & set(art["scenarios"][s]["anchors"]["items"])]
        if touched and all(set(art["scenarios"][s]["anchors"]["items"]) <= answered for s in touched):
            return folder
    return None


def budget_rows(pred) -> list[dict]:
    """Rows of ``SmallBoardPredictor.budget_table``: per (n, scenario) the leave-family-out MAE, mean 90 %
    half-width (points) and coverage of the served estimates and intervals."""
    rows = []
    for n in sorted(int(x) for x in pred.n_values):
        iv = pred.oof_intervals(n)
        iv = iv[np.isfinite(iv.estimate) & np.isfinite(iv.truth_t1)]
        for s, g in iv.groupby("scenario", sort=False):
            rows.append(
                {
                    "n": n,
                    "scenario": s,
                    "mae": 100 * float(np.mean(np.abs(g.estimate - g.truth_t1))),
                    "half_width": 50 * float(np.mean(g.upper - g.lower)),
                    "coverage": float(np.mean((g.lower <= g.truth_t1) & (g.truth_t1 <= g.upper))),
                    "n_models": int(len(g)),
                }
            )
    return rows
