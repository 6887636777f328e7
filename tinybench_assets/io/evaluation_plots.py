"""The picture of one evaluation for its ``model_evaluation`` metadata: where the model's estimate (and 90 %
interval) falls among the board's models on every scenario, and its estimates across tiny-benchmark versions."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .plots import _plt, _png


def board_rank(estimate: float, accuracies) -> tuple[int, int]:
    """(the rank the estimate would take among the board's models, 1 = best; how many models)."""
    acc = np.asarray(list(accuracies), dtype=float)
    acc = acc[np.isfinite(acc)]
    return int((acc > estimate).sum()) + 1, int(len(acc))


def evaluation_picture(model: str, latest: pd.DataFrame, board: dict, history: pd.DataFrame) -> bytes:
    """PNG: left, per scenario the board's models' accuracies (grey) and the model's estimate with its interval
    (``latest``: the current rows); right, each scenario's estimate per tiny-benchmark version (``history``: every
    row, oldest first). ``board``: {scenario: the board's models' accuracies}."""
    plt = _plt()
    scen = list(latest["scenario"])
    fig, (ax, hx) = plt.subplots(1, 2, figsize=(10, 0.5 + 0.45 * max(3, len(scen))), width_ratios=(3, 2))
    rng = np.random.default_rng(0)
    for y, r in enumerate(latest.itertuples(index=False)):
        acc = np.asarray(board.get(r.scenario, []), dtype=float)
        ax.scatter(100 * acc, y + rng.uniform(-0.18, 0.18, len(acc)), s=3, color="0.65", alpha=0.4, lw=0)
        if np.isfinite(r.estimate):
            lo, up = (np.nan if v is None else v for v in (r.lower, r.upper))
            ax.errorbar(
                100 * r.estimate,
                y,
                xerr=[[100 * (r.estimate - lo)], [100 * (up - r.estimate)]] if np.isfinite(lo + up) else None,
                fmt="o",
                color="tab:red",
                capsize=3,
            )
            rank, n = board_rank(r.estimate, acc)
            if n:
                ax.annotate(f"#{rank} of {n}", (100 * r.estimate, y + 0.3), fontsize=7, ha="center")
    ax.set_yticks(range(len(scen)), scen)
    ax.set_ylim(-0.7, len(scen) - 0.3)
    ax.invert_yaxis()
    ax.set_xlabel("accuracy (%): board models (grey), this model's estimate and 90 % interval (red)")
    ax.set_title(f"{model}: where it would rank", fontsize=9)
    versions = list(dict.fromkeys(history["tiny_benchmark_version"]))
    for s, part in history.groupby("scenario", sort=False):
        x = [versions.index(v) for v in part["tiny_benchmark_version"]]
        hx.plot(x, 100 * part["estimate"].astype(float), marker="o", ms=3, lw=1, label=str(s))
    hx.set_xticks(range(len(versions)), [v[:6] for v in versions], rotation=45, fontsize=7)
    hx.set_xlabel("tiny benchmark version (oldest first)")
    hx.set_ylabel("estimate (%)")
    hx.set_title(f"history: {len(versions)} version(s)", fontsize=9)
    if len(scen) <= 12:
        hx.legend(fontsize=6)
    return _png(fig)
