"""Estimator choice of the anchor predictor, on validation MAE: ``tinybench`` (per scenario the best estimator of
one clustering shared by all scenarios) and ``tinybench_own`` (among estimators reading only the scenario's anchors).

The rule is :func:`choose`; :class:`Selector` is the predictor's step that applies it at every budget.
"""

from __future__ import annotations

import pandas as pd

from .names import PER_SCENARIO


def choose(vn: pd.DataFrame, scenarios) -> dict:
    """The selection rule at one budget: {(scenario, selector): {"t1": (clustering, estimator), "t2": (...)}}.

    vn : one row per (clustering, scenario, estimator) with val_mae_t1 and val_mae_t2 (NaN allowed for T2).
    tinybench: the clustering with the lowest mean over scenarios of its best T1 MAE, then per scenario its best
    estimator for T1 (and for T2); tinybench_own: the best estimator reading only the scenario's own anchors.
    """
    best_by_c = vn.groupby(["clustering", "scenario"]).val_mae_t1.min().groupby("clustering").mean()
    c_star = str(best_by_c.idxmin())
    out = {}
    for s in scenarios:
        vs = vn[vn.scenario == s]
        cands = vs[vs.clustering == c_star]
        r1 = cands.loc[cands.val_mae_t1.idxmin()]
        c2 = cands.dropna(subset=["val_mae_t2"])
        r2 = c2.loc[c2.val_mae_t2.idxmin()] if len(c2) else r1
        out[(s, "tinybench")] = {"t1": (c_star, r1.estimator), "t2": (c_star, r2.estimator)}
        own = vs[vs.estimator.isin(PER_SCENARIO)]
        if len(own):
            o1 = own.loc[own.val_mae_t1.idxmin()]
            o2d = own.dropna(subset=["val_mae_t2"])
            o2 = o2d.loc[o2d.val_mae_t2.idxmin()] if len(o2d) else o1
            out[(s, "tinybench_own")] = {"t1": (o1.clustering, o1.estimator), "t2": (o2.clustering, o2.estimator)}
    return out


class Selector:
    """Step 10: per (n, scenario), the served estimators tinybench and tinybench_own (:func:`choose`).

    Fitted attributes: ``validation_`` (the validation MAE of every clustering, n, scenario and estimator, the random
    baseline included) and ``selection_`` ({(n, scenario, selector): {"t1": (clustering, estimator), "t2": ...}}).
    """

    def fit(self, data, done) -> None:
        """Choose on the validation records ``data.records`` (the random baseline is never chosen)."""
        self.validation_ = pd.DataFrame(data.records)
        v = self.validation_[self.validation_.clustering != "random"]
        self.selection_ = {}
        for n in done["anchors"].n_values:
            for (s, name), d in choose(v[v.n == n], data.layout.scenarios).items():
                self.selection_[(n, s, name)] = d

    def table(self) -> pd.DataFrame:
        """One row per (n, scenario, selector) with the chosen clustering and estimator for T1 and T2."""
        rows = []
        for (n, s, name), d in self.selection_.items():
            rows.append(
                {
                    "n": n,
                    "scenario": s,
                    "selector": name,
                    "clustering_t1": d["t1"][0],
                    "estimator_t1": d["t1"][1],
                    "clustering_t2": d["t2"][0],
                    "estimator_t2": d["t2"][1],
                }
            )
        return pd.DataFrame(rows)
