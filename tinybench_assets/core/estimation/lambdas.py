"""gp-IRT lambdas of the anchor predictor: the tutorial's formula lambda = b^2 / (v / (4 n) + b^2) and the
validation-chosen lambda (grid search on validation MAE), and the gp-IRT estimates they give.

:class:`LambdaMixin` reads ``scenarios_``, ``b_``, ``v_`` and the parameter ``lambda_grid``; it fills
``lambdas_`` ({(clustering, n, scenario, "sep"|"joint"): {"tutorial": float, "validation": float}}).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import estimators as est


class LambdaMixin:
    """Tutorial and validation gp-IRT lambdas."""

    def _fit_lambdas(self, raw, T1v, c, n):
        """Lambdas for (c, n) from the validation models' raw estimates ({(s, est): (V,)}) and T1 truth T1v (V, scenarios)."""
        for s in self.scenarios_:
            t = T1v[s].to_numpy()
            for fit, sfx in (("sep", ""), ("joint", "_joint")):
                a, p = raw[(s, "anchor")], raw[(s, "pirt" + sfx)]
                ok = np.isfinite(a) & np.isfinite(p) & np.isfinite(t)
                lam_val, _ = est.choose_lambda(a[ok], p[ok], t[ok], self.lambda_grid)
                lam_tut = est.tutorial_lambda(self.b_[(fit, s)], self.v_[s], self.n_for(s, n))
                self.lambdas_[(c, n, s, fit)] = {"tutorial": lam_tut, "validation": lam_val}

    def _compose(self, raw, c, n):
        """Add gp-IRT variants (lambda from the tutorial formula and from validation)."""
        out = dict(raw)
        for s in self.scenarios_:
            for fit, sfx in (("sep", ""), ("joint", "_joint")):
                lam = self.lambdas_[(c, n, s, fit)]
                a, p = raw[(s, "anchor")], raw[(s, "pirt" + sfx)]
                out[(s, "gpirt" + sfx)] = est.gpirt_estimate(a, p, lam["tutorial"])
                out[(s, "gpirt_val" + sfx)] = est.gpirt_estimate(a, p, lam["validation"])
        return out

    @property
    def lambdas(self) -> pd.DataFrame:
        """gp-IRT lambdas: one row per (clustering, n, scenario, fit) with tutorial and validation lambda, b, v."""
        rows = []
        for (c, n, s, fit), lam in self.lambdas_.items():
            rows.append({"clustering": c, "n": n, "scenario": s, "fit": fit, "lambda_tutorial": lam["tutorial"],
                         "lambda_validation": lam["validation"], "b": self.b_[(fit, s)], "v": self.v_[s]})
        return pd.DataFrame(rows)
