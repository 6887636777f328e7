"""Stacks of the anchor predictor: convex combinations (weights >= 0, sum 1) of the estimators in ``STACKS``,
fitted on validation models, one for T1 and one for the T2 input; and, read from a small board's artifact, the
median of the members of a stack named in ``MEDIANS`` (its weights are not read)."""

from __future__ import annotations

import numpy as np

from ..json_floats import enc_list
from . import estimators as est
from .names import MEDIANS, STACKS


class Stacks:
    """Step 8: the convex stacks of every (clustering, n, scenario).

    Parameter: ``seed`` (the out-of-fold split). Fitted attribute: ``stacks_`` ({(c, n, scenario, stack name):
    {"members": [estimator], "w_t1": (K,), "w_t2": (K,)}}).
    """

    def __init__(self, seed: int = 0):
        self.seed = seed

    @classmethod
    def from_dict(cls, blocks: dict, c: str, n: int, keep=None) -> "Stacks":
        """A fitted step of one (c, n) from scenario blocks ({scenario: {"stacks": :meth:`to_dict`'s, decoded}}), only
        the stacks ``keep(scenario, name)`` accepts (default all)."""
        step = cls()
        step.stacks_ = {
            (c, n, s, name): x
            for s, block in blocks.items()
            for name, x in block["stacks"].items()
            if keep is None or keep(s, name)
        }
        return step

    def of(self, c: str, n: int, s: str) -> dict:
        """{stack name: {"members", "w_t1", "w_t2"}} of scenario ``s`` at (c, n)."""
        return {name: x for (cc, nn, ss, name), x in self.stacks_.items() if (cc, nn, ss) == (c, n, s)}

    def to_dict(self, c: str, n: int, s: str) -> dict:
        """The artifact's ``stacks`` of scenario ``s`` at (c, n)."""
        return {
            "stacks": {
                name: {"members": list(x["members"]), "w_t1": enc_list(x["w_t1"]), "w_t2": enc_list(x["w_t2"])}
                for name, x in self.of(c, n, s).items()
            }
        }

    def fit(self, data, done) -> None:
        """Stacks on the validation outputs ``data.val``, to which their out-of-fold outputs are added."""
        self.stacks_ = {}
        for (c, n), (full, t2raw) in data.val.items():
            if c != "random":
                self._fit_budget(full, t2raw, data.T1v, data.T2v, data.layout.scenarios, c, n)

    def _fit_budget(self, full, t2raw, T1v, T2v, scenarios, c, n) -> None:
        for s in scenarios:
            t1, t2 = T1v[s].to_numpy(), T2v[s].to_numpy()
            for name in STACKS:
                members = [m for m in STACKS[name] if (s, m) in full]
                if len(members) < 2:
                    continue
                X1 = np.column_stack([full[(s, m)] for m in members])
                X2 = np.column_stack([t2raw.get((s, m), full[(s, m)]) for m in members])
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

    def transform(self, full, t2raw, c, n) -> None:
        """Add the fitted stacks of (c, n) (T1 estimate and T2 input) to ``full`` / ``t2raw`` in place."""
        for (cc, nn, s, name), st in self.stacks_.items():
            if (cc, nn) != (c, n):
                continue
            X1 = np.column_stack([full[(s, m)] for m in st["members"]])
            X2 = np.column_stack([t2raw.get((s, m), full[(s, m)]) for m in st["members"]])
            if name in MEDIANS:  # a small board's median of its members (small_rules.MEDIAN), not a weighted sum
                full[(s, name)], t2raw[(s, name)] = np.median(X1, axis=1), np.median(X2, axis=1)
            else:
                full[(s, name)] = X1 @ st["w_t1"]
                t2raw[(s, name)] = X2 @ st["w_t2"]
