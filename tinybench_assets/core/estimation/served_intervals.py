"""Intervals of the SERVED estimators (tinybench, tinybench_own) that allow for their selection.

The served estimator of a scenario is the one with the lowest validation MAE among dozens; its own validation
residuals are then optimistic (the winner's curse), and a conformal interval fitted on them under-covers new
models (grouped openllm splits, n = 30: arc 0.866 for a 90 % interval). Here the validation models are cut into
``SERVED_FOLDS`` folds (whole families when the validation split is grouped); for each fold the selection rule
(:func:`~.selection.choose`) is re-run on the other folds and the estimator it picks is scored on the fold. The
pooled out-of-selection residuals measure the selection procedure, not its winner, and the served interval is
their conformal interval (same alpha and scale as every other interval).

:class:`ServedIntervalMixin` reads ``scenarios_``, ``n_values``, ``val_groups_`` and the parameters ``alpha``,
``interval_scale``, ``seed``; it fills ``served_int_t1_`` ({(n, scenario, selector): ConformalInterval}).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..calibration import ConformalInterval
from ..splits import model_unit
from .selection import choose

SERVED_FOLDS = 5


class ServedIntervalMixin:
    """Selection-aware T1 intervals of the served estimators."""

    def _validation_folds(self, n_val: int) -> np.ndarray:
        """(n_val,) fold id in [0, SERVED_FOLDS): by family when validation is grouped, else a seeded shuffle."""
        groups = getattr(self, "val_groups_", None)
        if groups is not None and len(groups) == n_val:
            uniq, inv = np.unique(np.asarray(groups, dtype=object), return_inverse=True)
            return np.minimum((model_unit(uniq, f"folds:{self.seed}") * SERVED_FOLDS).astype(int), SERVED_FOLDS - 1)[inv]
        return np.random.default_rng(self.seed + 31).permutation(n_val) % SERVED_FOLDS

    def _fit_served_intervals(self, val_t1: dict, T1v: pd.DataFrame) -> None:
        """val_t1 : {(clustering, n, scenario, estimator): (V,) validation T1 estimates} (random excluded)."""
        self.served_int_t1_ = {}
        folds = self._validation_folds(len(T1v))
        truth = {s: T1v[s].to_numpy() for s in self.scenarios_}
        for n in self.n_values:
            keys = [k for k in val_t1 if k[1] == n]
            pairs: dict = {}
            for f in range(SERVED_FOLDS):
                inside, rows = folds != f, []
                for c, _, s, e in keys:
                    x, t = val_t1[(c, n, s, e)], truth[s]
                    ok = inside & np.isfinite(x) & np.isfinite(t)
                    if ok.any():
                        rows.append({"clustering": c, "scenario": s, "estimator": e,
                                     "val_mae_t1": float(np.mean(np.abs(x[ok] - t[ok]))), "val_mae_t2": np.nan})
                if not rows or (folds == f).sum() == 0:
                    continue
                vn = pd.DataFrame(rows)
                if set(vn.scenario) != set(self.scenarios_):
                    continue
                for (s, name), d in choose(vn, self.scenarios_).items():
                    c, e = d["t1"]
                    x, t = val_t1[(c, n, s, e)], truth[s]
                    ok = (folds == f) & np.isfinite(x) & np.isfinite(t)
                    pairs.setdefault((s, name), []).append((x[ok], t[ok]))
            for (s, name), parts in pairs.items():
                x = np.concatenate([p[0] for p in parts])
                t = np.concatenate([p[1] for p in parts])
                if len(x) >= 2:
                    self.served_int_t1_[(n, s, name)] = ConformalInterval(self.alpha, self.interval_scale).fit(x, t)

    def served_interval(self, n: int, s: str, name: str, estimate: np.ndarray, fallback):
        """(lower, upper) of the served estimator ``name`` for ``estimate``; ``fallback`` (lower, upper) when the
        predictor has no selection-aware interval (an older pickle, or too few validation models)."""
        iv = getattr(self, "served_int_t1_", {}).get((n, s, name))
        return fallback if iv is None else iv.predict(estimate)
