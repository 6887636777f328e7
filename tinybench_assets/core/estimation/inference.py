"""Inference of the anchor predictor: every estimator, calibrated and with intervals, for new models that
answered the anchors (only the anchor cells are read).

:class:`InferenceMixin` reads every fitted attribute through the other mixins' methods; it sets nothing.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..responses import ResponseMatrix
from .names import SELECTED


class InferenceMixin:
    """``estimate`` for new models."""

    def estimate(self, Y, models=None, *, n_values=None, include_random: bool = False, random_seed: int = 12345) -> pd.DataFrame:
        """Estimates for new models.

        Parameters
        ----------
        Y : ndarray (M, I_all) aligned with the fitted matrix's items (or a ResponseMatrix with the same
            items). Only the anchor cells of each (clustering, n) are read for the anchor-based estimators;
            everything else may be NaN.
        models : names of the M rows (default 0..M-1).
        include_random : also score the random-sampling baseline (reads n random items per model: only
            meaningful when Y holds the models' full responses, as in a backtest).

        Returns
        -------
        DataFrame, one row per model x scenario x (clustering, estimator) x n with columns
        model, scenario, clustering, estimator, n, estimate, lower, upper, estimate_t2, lower_t2,
        upper_t2, source (the underlying clustering/estimator for the selected rows).
        """
        if isinstance(Y, ResponseMatrix):
            if list(Y.items) != self.items_:
                raise ValueError("ResponseMatrix items differ from the fitted items")
            models = Y.models if models is None else models
            Y = Y.scores
        Y = np.asarray(Y, dtype=float)
        M = Y.shape[0]
        models = np.arange(M) if models is None else np.asarray(models, dtype=object)
        frames = []
        for n in (self.n_values if n_values is None else n_values):
            cache = {}
            for c in self.clusterings:
                raw, t2raw = self._raw(self._mask_to_anchors(Y, c, n), c, n)
                full = self._compose(raw, c, n)
                self._apply_stacks(full, t2raw, c, n)
                for (s, e), x in full.items():
                    cache[(c, s, e)] = self._finish(x, t2raw.get((s, e), x), c, n, s, e)
            if include_random:
                for s in self.scenarios_:
                    x = self._random(Y, s, n, random_seed + 7919 * n)
                    cache[("random", s, "random")] = self._finish(x, x, "random", n, s, "random")
            for (c, s, e), cols in cache.items():
                frames.append(self._frame(models, s, c, e, n, cols, f"{c}/{e}"))
            for s in self.scenarios_:
                for name in SELECTED:
                    sel = self.selection_.get((n, s, name))
                    if sel is None:
                        continue
                    (c1, e1), (c2, e2) = sel["t1"], sel["t2"]
                    a, b = cache[(c1, s, e1)], cache[(c2, s, e2)]
                    lo, up = self.served_interval(n, s, name, a["estimate"], (a["lower"], a["upper"]))
                    cols = {"estimate": a["estimate"], "lower": lo, "upper": up,
                            "estimate_t2": b["estimate_t2"], "lower_t2": b["lower_t2"], "upper_t2": b["upper_t2"]}
                    frames.append(self._frame(models, s, "selected", name, n, cols, f"{c1}/{e1}|{c2}/{e2}"))
        out = pd.concat(frames, ignore_index=True)
        return out[np.isfinite(out.estimate.to_numpy())].reset_index(drop=True)

    @staticmethod
    def _frame(models, s, c, e, n, cols, source):
        df = pd.DataFrame({"model": models, "scenario": s, "clustering": c, "estimator": e, "n": n, **cols})
        df["source"] = source
        return df
