"""gp-IRT lambdas of the anchor predictor: the tutorial's formula lambda = b^2 / (v / (4 n) + b^2) and the
validation-chosen lambda (grid search on validation MAE), and the gp-IRT estimates they give."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..json_floats import enc
from . import estimators as est

FITS = (("sep", ""), ("joint", "_joint"))


class Lambdas:
    """Step 7: gp-IRT lambdas per (clustering, n, scenario, fit), fit in {"sep", "joint"}.

    Parameter: ``lambda_grid`` (grid of the validation-chosen lambda). Fitted attribute: ``lambdas_``
    ({(c, n, scenario, fit): {"tutorial": float, "validation": float}}).
    """

    def __init__(self, lambda_grid=est.LAMBDA_GRID):
        self.lambda_grid = np.asarray(lambda_grid, dtype=float)

    @classmethod
    def from_dict(cls, blocks: dict, c: str, n: int) -> "Lambdas":
        """A fitted step of one (c, n) from scenario blocks ({scenario: {"lambdas": :meth:`to_dict`'s, decoded}})."""
        step = cls()
        step.lambdas_ = {
            (c, n, s, fit): {k: float(block["lambdas"][fit][k]) for k in ("tutorial", "validation")}
            for s, block in blocks.items()
            for fit, _ in FITS
        }
        return step

    def to_dict(self, c: str, n: int, s: str) -> dict:
        """The artifact's ``lambdas`` of scenario ``s`` at (c, n): {fit: {"tutorial", "validation"}}."""
        return {"lambdas": {fit: {k: enc(x) for k, x in self.lambdas_[(c, n, s, fit)].items()} for fit, _ in FITS}}

    def fit(self, data, done) -> None:
        """Lambdas of every (c, n) from the validation outputs ``data.val``, to which the gp-IRT variants are added."""
        self.lambdas_ = {}
        irt, anchors = done["irt"], done["anchors"]
        for (c, n), (raw, _) in data.val.items():
            if c == "random":
                continue
            for s in data.layout.scenarios:
                t = data.T1v[s].to_numpy()
                for fit, sfx in FITS:
                    a, p = raw[(s, "anchor")], raw[(s, "pirt" + sfx)]
                    ok = np.isfinite(a) & np.isfinite(p) & np.isfinite(t)
                    lam_val, _ = est.choose_lambda(a[ok], p[ok], t[ok], self.lambda_grid)
                    lam_tut = est.tutorial_lambda(irt.b_[(fit, s)], irt.v_[s], anchors.n_for(s, n))
                    self.lambdas_[(c, n, s, fit)] = {"tutorial": lam_tut, "validation": lam_val}
            data.val[(c, n)] = (self.transform(raw, c, n), data.val[(c, n)][1])

    def transform(self, raw, c, n) -> dict:
        """``raw`` ({(s, est): (M,)}) with the gp-IRT variants added (lambda from the tutorial formula and from
        validation), as a new dict."""
        out = dict(raw)
        for (cc, nn, s, fit), lam in self.lambdas_.items():
            if (cc, nn) != (c, n):
                continue
            sfx = dict(FITS)[fit]
            a, p = raw[(s, "anchor")], raw[(s, "pirt" + sfx)]
            out[(s, "gpirt" + sfx)] = est.gpirt_estimate(a, p, lam["tutorial"])
            out[(s, "gpirt_val" + sfx)] = est.gpirt_estimate(a, p, lam["validation"])
        return out

    def table(self, irt) -> pd.DataFrame:
        """One row per (clustering, n, scenario, fit) with tutorial and validation lambda, b, v."""
        rows = []
        for (c, n, s, fit), lam in self.lambdas_.items():
            rows.append(
                {
                    "clustering": c,
                    "n": n,
                    "scenario": s,
                    "fit": fit,
                    "lambda_tutorial": lam["tutorial"],
                    "lambda_validation": lam["validation"],
                    "b": irt.b_[(fit, s)],
                    "v": irt.v_[s],
                }
            )
        return pd.DataFrame(rows)
