"""Intervals of the SERVED estimators (tinybench, tinybench_own) that allow for their selection.

The served estimator of a scenario is the one with the lowest validation MAE among dozens; its own validation
residuals are then optimistic (the winner's curse), and a conformal interval fitted on them under-covers new
models (grouped openllm splits, n = 30: arc 0.866 for a 90 % interval). Here the validation models are cut into
``SERVED_FOLDS`` folds (whole families when the validation split is grouped); for each fold the selection rule
(:func:`~.selection.choose`) is re-run on the other folds and the estimator it picks is scored on the fold. The
pooled out-of-selection residuals measure the selection procedure, not its winner, and the served interval is
their conformal interval (same alpha and scale as every other interval).

:class:`ServedIntervals` is the predictor's last step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..json_floats import to_dict_or_none
from .calibration import ConformalInterval
from .selection import beyond_scores, choose
from .splits import model_unit

SERVED_FOLDS = 5


def validation_folds(n_val: int, groups, seed: int) -> np.ndarray:
    """(n_val,) fold id in [0, SERVED_FOLDS): by family when the validation models' ``groups`` are given, else a
    seeded shuffle."""
    if groups is not None and len(groups) == n_val:
        uniq, inv = np.unique(np.asarray(groups, dtype=object), return_inverse=True)
        return np.minimum((model_unit(uniq, f"folds:{seed}") * SERVED_FOLDS).astype(int), SERVED_FOLDS - 1)[inv]
    return np.random.default_rng(seed + 31).permutation(n_val) % SERVED_FOLDS


class ServedIntervals:
    """Step 12: selection-aware T1 intervals of the served estimators (module docstring).

    Parameters: ``alpha``, ``interval_scale``, ``seed``. Fitted attribute: ``intervals_`` ({(n, scenario, selector):
    ConformalInterval}).
    """

    def __init__(self, alpha: float = 0.1, interval_scale: str = "binomial", seed: int = 0):
        self.alpha, self.interval_scale, self.seed = alpha, interval_scale, seed

    @classmethod
    def from_dict(cls, blocks: dict, n: int, name: str = "tinybench") -> "ServedIntervals":
        """A fitted step of budget n from scenario blocks ({scenario: {"recommended_learned": {"interval_t1": ...}}},
        decoded): the served estimator's interval where a block has one."""
        step = cls()
        step.intervals_ = {
            (n, s, name): ConformalInterval.from_dict(block["recommended_learned"]["interval_t1"])
            for s, block in blocks.items()
            if block["recommended_learned"].get("interval_t1") is not None
        }
        return step

    def to_dict(self, n: int, s: str, name: str = "tinybench") -> dict | None:
        """The served estimator's selection-aware T1 interval as the artifact stores it, or None without one."""
        return to_dict_or_none(self.intervals_.get((n, s, name)))

    def fit(self, data, done) -> None:
        """Re-run the selection rule on all folds but one of the validation models, score its pick on that fold."""
        self.intervals_ = {}
        scenarios = data.layout.scenarios
        val_t1 = {
            (c, n, s, e): x for (c, n), (full, _) in data.val.items() if c != "random" for (s, e), x in full.items()
        }
        folds = validation_folds(len(data.T1v), done["split"].val_groups_, self.seed)
        truth = {s: data.T1v[s].to_numpy() for s in scenarios}
        for n in done["anchors"].n_values:
            keys = [k for k in val_t1 if k[1] == n]
            pairs: dict = {}
            for f in range(SERVED_FOLDS):
                inside, rows = folds != f, []
                for c, _, s, e in keys:
                    x, t = val_t1[(c, n, s, e)], truth[s]
                    ok = inside & np.isfinite(x) & np.isfinite(t)
                    if ok.any():
                        rows.append(
                            {
                                "clustering": c,
                                "scenario": s,
                                "estimator": e,
                                "val_mae_t1": float(np.mean(np.abs(x[ok] - t[ok]))),
                                "val_mae_t2": np.nan,
                            }
                        )
                if not rows or (folds == f).sum() == 0:
                    continue
                vn = pd.DataFrame(rows)
                if set(vn.scenario) != set(scenarios):
                    continue
                for (s, name), d in choose(vn, scenarios, beyond_scores(done, n)).items():
                    c, e = d["t1"]
                    x, t = val_t1[(c, n, s, e)], truth[s]
                    ok = (folds == f) & np.isfinite(x) & np.isfinite(t)
                    pairs.setdefault((s, name), []).append((x[ok], t[ok]))
            self._fit_pairs(n, pairs)

    def _fit_pairs(self, n, pairs: dict) -> None:
        for (s, name), parts in pairs.items():
            x = np.concatenate([p[0] for p in parts])
            t = np.concatenate([p[1] for p in parts])
            if len(x) >= 2:
                self.intervals_[(n, s, name)] = ConformalInterval(self.alpha, self.interval_scale).fit(x, t)

    def predict(self, n: int, s: str, name: str, estimate: np.ndarray, fallback):
        """(lower, upper) of the served estimator ``name`` for ``estimate``; ``fallback`` (lower, upper) when there is
        no selection-aware interval (too few validation models)."""
        iv = self.intervals_.get((n, s, name))
        return fallback if iv is None else iv.predict(estimate)
