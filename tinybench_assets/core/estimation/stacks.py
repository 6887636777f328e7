"""Stacks of the anchor predictor: convex combinations (weights >= 0, sum 1) of the estimators in ``STACKS``,
fitted on validation models, one for T1 and one for the T2 input.

:class:`StackMixin` reads ``scenarios_`` and the parameter ``seed``; it fills ``stacks_`` ({(clustering, n,
scenario, stack name): {"members": [estimator], "w_t1": (K,), "w_t2": (K,)}}).
"""
from __future__ import annotations

import numpy as np

from .. import estimators as est
from .names import STACKS


class StackMixin:
    """Fit and apply the convex stacks."""

    def _stack_inputs(self, full, t2raw, s, name):
        """(members present, X1 (M, K) their T1 estimates, X2 (M, K) their T2 inputs) of stack ``name`` in ``s``."""
        members = [m for m in STACKS[name] if (s, m) in full]
        X1 = np.column_stack([full[(s, m)] for m in members])
        X2 = np.column_stack([t2raw.get((s, m), full[(s, m)]) for m in members])
        return members, X1, X2

    def _apply_stacks(self, full, t2raw, c, n):
        """Add the fitted convex stacks (T1 estimate and T2 input) to ``full`` / ``t2raw`` in place."""
        for s in self.scenarios_:
            for name in STACKS:
                st = self.stacks_.get((c, n, s, name))
                if st is None:
                    continue
                X1 = np.column_stack([full[(s, m)] for m in st["members"]])
                X2 = np.column_stack([t2raw.get((s, m), full[(s, m)]) for m in st["members"]])
                full[(s, name)] = X1 @ st["w_t1"]
                t2raw[(s, name)] = X2 @ st["w_t2"]

    def _fit_stacks(self, full, t2raw, T1v, T2v, c, n):
        """Convex stacks on validation models; ``full`` / ``t2raw`` get their out-of-fold outputs."""
        for s in self.scenarios_:
            t1, t2 = T1v[s].to_numpy(), T2v[s].to_numpy()
            for name in STACKS:
                members, X1, X2 = self._stack_inputs(full, t2raw, s, name)
                if len(members) < 2:
                    continue
                ok1 = np.isfinite(X1).all(1) & np.isfinite(t1)
                oof1, w1 = est.stack_out_of_fold(X1[ok1], t1[ok1], seed=self.seed)
                ok2 = np.isfinite(X2).all(1) & np.isfinite(t2)
                w2 = np.full(len(members), 1.0 / len(members))
                oof2 = None
                if ok2.sum() >= 10:
                    oof2, w2 = est.stack_out_of_fold(X2[ok2], t2[ok2], seed=self.seed)
                self.stacks_[(c, n, s, name)] = {"members": members, "w_t1": w1, "w_t2": w2}
                v1 = np.full(len(t1), np.nan)
                v1[ok1] = oof1
                full[(s, name)] = v1
                v2 = np.full(len(t2), np.nan)
                if oof2 is not None:
                    v2[ok2] = oof2
                t2raw[(s, name)] = v2
