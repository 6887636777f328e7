"""Inference of the anchor predictor: every estimator, calibrated and with intervals, for new models that
answered the anchors (only the anchor cells are read), and the served estimators' rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base_estimates import random_baseline
from .chain import calibrated, estimates
from .names import SELECTED


def _frame(models, s, c, e, n, cols, source):
    df = pd.DataFrame({"model": models, "scenario": s, "clustering": c, "estimator": e, "n": n, **cols})
    df["source"] = source
    return df


def _served_frames(steps, lay, models, n, cache) -> list:
    """The rows of the served estimators (tinybench, tinybench_own) at budget n from the calibrated ``cache``."""
    frames = []
    for s in lay.scenarios:
        for name in SELECTED:
            sel = steps["selector"].selection_.get((n, s, name))
            if sel is None:
                continue
            (c1, e1), (c2, e2) = sel["t1"], sel["t2"]
            a, b = cache[(c1, s, e1)], cache[(c2, s, e2)]
            lo, up = steps["served"].predict(n, s, name, a["estimate"], (a["lower"], a["upper"]))
            cols = {
                "estimate": a["estimate"],
                "lower": lo,
                "upper": up,
                "estimate_t2": b["estimate_t2"],
                "lower_t2": b["lower_t2"],
                "upper_t2": b["upper_t2"],
            }
            source = np.full(len(models), f"{c1}/{e1}|{c2}/{e2}", dtype=object)
            rule = steps["frontier"].rule(n, s, name) if "frontier" in steps else None
            if rule is not None:
                beyond_board(rule, cache, c1, s, cols, source)
            frames.append(_frame(models, s, "selected", name, n, cols, source))
    return frames


def beyond_board(rule, cache, c, s, cols, source) -> None:
    """Serve the frontier ``rule`` (:class:`~.frontier.FrontierRule`) to the models its position places beyond the
    board: their estimate, interval and full score in ``cols`` and their ``source`` ("beyond-board:c/e") are replaced
    in place (the full score's interval spans the one ``cols`` held, the board's). ``cache``: the calibrated estimates {(clustering, scenario, estimator): columns}."""
    pos = cache.get((c, s, rule.position))
    x = cache.get((rule.t1[0], s, rule.t1[1]))
    if pos is None or x is None:
        return
    out = rule.beyond(pos["estimate"])
    if out.any():
        for k, v in rule.serve(x["estimate"], pos["estimate"], (cols["lower_t2"], cols["upper_t2"])).items():
            cols[k] = np.where(out, v, cols[k])
        source[out] = f"beyond-board:{rule.t1[0]}/{rule.t1[1]}"


def estimate_table(steps, lay, Y, models, n_values, include_random: bool, random_seed: int) -> pd.DataFrame:
    """One row per model x scenario x (clustering, estimator) x n, then the served rows (see
    :meth:`~tinybench_assets.core.estimation.predictor.AnchorPredictor.estimate`). Y (M, I_all) float; models (M,)."""
    anchors = steps["anchors"]
    frames = []
    for n in n_values:
        cache = {}
        for c in anchors.clusterings:
            full, t2raw = estimates(anchors.mask(Y, c, n, lay.scenarios), lay, steps, c, n)
            for (s, e), cols in calibrated(full, t2raw, steps, c, n).items():
                cache[(c, s, e)] = cols
        if include_random:
            for s in lay.scenarios:
                x = random_baseline(Y, lay, anchors, s, n, random_seed + 7919 * n)
                cache[("random", s, "random")] = steps["calibrators"].predict(x, x, "random", n, s, "random")
        for (c, s, e), cols in cache.items():
            frames.append(_frame(models, s, c, e, n, cols, f"{c}/{e}"))
        frames += _served_frames(steps, lay, models, n, cache)
    out = pd.concat(frames, ignore_index=True)
    return out[np.isfinite(out.estimate.to_numpy())].reset_index(drop=True)
