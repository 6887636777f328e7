"""Estimator choice of the anchor predictor, on validation MAE: ``tinybench`` (per scenario the best estimator of
one clustering shared by all scenarios) and ``tinybench_own`` (among estimators reading only the scenario's anchors).

The clustering of ``tinybench`` is the one with the lowest validation MAE on the board, unless another one is within
:data:`TIE` of it and holds up better beyond the board (the frontier probe's ``worst_``, :mod:`.frontier_probe`): a
new model is usually stronger than the board, and two clusterings that tie on the board can differ widely there.

The rule is :func:`choose`; :class:`Selector` is the predictor's step that applies it at every budget.
"""

from __future__ import annotations

import pandas as pd

from ..json_floats import enc
from .names import PER_SCENARIO

# clusterings whose mean validation MAE is within this share of the best tie on the board: below one standard error
# of the paired difference between two clusterings (3.2 % of the MAE on a grouped openllm split's 702 validation
# models), so a tie is broken only where the board cannot tell the clusterings apart
TIE = 0.02


def _best_rows(rows: pd.DataFrame) -> tuple:
    """(T1 row, T2 row): the rows with the lowest validation MAE for T1 and for T2 (T2 falls back to the T1 row when
    no T2 MAE exists); ties go to the first row."""
    r1 = rows.loc[rows.val_mae_t1.idxmin()]
    r2rows = rows.dropna(subset=["val_mae_t2"])
    return r1, (r2rows.loc[r2rows.val_mae_t2.idxmin()] if len(r2rows) else r1)


def choose(vn: pd.DataFrame, scenarios, beyond: dict | None = None) -> dict:
    """The selection rule at one budget: {(scenario, selector): {"t1": (clustering, estimator), "t2": (...)}}.

    vn : one row per (clustering, scenario, estimator) with val_mae_t1 and val_mae_t2 (NaN allowed for T2).
    beyond : {clustering: score beyond the board, lower is better} (the frontier probe's ``worst_`` at this budget).
    tinybench: the clustering with the lowest mean over scenarios of its best T1 MAE (among those within ``TIE`` of
    it, the one with the lowest ``beyond`` score), then per scenario its best estimator for T1 (and for T2);
    tinybench_own: the best estimator reading only the scenario's own anchors.
    """
    best_by_c = vn.groupby(["clustering", "scenario"]).val_mae_t1.min().groupby("clustering").mean()
    c_star = str(best_by_c.idxmin())
    beyond = beyond or {}
    tied = [str(c) for c, m in best_by_c.items() if m <= best_by_c.min() * (1 + TIE) and str(c) in beyond]
    if c_star in beyond and len(tied) > 1:
        c_star = min(tied, key=lambda c: (beyond[c], best_by_c[c]))
    out = {}
    for s in scenarios:
        vs = vn[vn.scenario == s]
        cands = vs[vs.clustering == c_star]
        r1, r2 = _best_rows(cands)
        out[(s, "tinybench")] = {"t1": (c_star, r1.estimator), "t2": (c_star, r2.estimator)}
        own = vs[vs.estimator.isin(PER_SCENARIO)]
        if len(own):
            o1, o2 = _best_rows(own)
            out[(s, "tinybench_own")] = {"t1": (o1.clustering, o1.estimator), "t2": (o2.clustering, o2.estimator)}
    return out


def best(rows: pd.DataFrame) -> dict:
    """{t1, t2}: the estimator with the lowest validation MAE among ``rows`` (T2 falls back to T1's choice when no T2
    MAE exists); ties go to the first row, as in :func:`choose`."""
    r1, r2 = _best_rows(rows)
    return {"t1": str(r1.estimator), "t2": str(r2.estimator)}


def beyond_scores(done: dict, n: int) -> dict:
    """{clustering: the frontier probe's worst-scenario score beyond the board} at budget n ({} without a probe)."""
    probe = done.get("probe")
    worst = {} if probe is None else probe.worst_
    return {c: v for (c, nn), v in worst.items() if nn == n and v == v}


class Selector:
    """Step 11: per (n, scenario), the served estimators tinybench and tinybench_own (:func:`choose`).

    Fitted attributes: ``validation_`` (the validation MAE of every clustering, n, scenario and estimator, the random
    baseline included) and ``selection_`` ({(n, scenario, selector): {"t1": (clustering, estimator), "t2": ...}}).
    """

    def fit(self, data, done) -> None:
        """Choose on the validation records ``data.records`` (the random baseline is never chosen) and the frontier
        probe's scores beyond the board (``done["probe"]``, when fitted)."""
        self.validation_ = pd.DataFrame(data.records)
        v = self.validation_[self.validation_.clustering != "random"]
        self.selection_ = {}
        for n in done["anchors"].n_values:
            for (s, name), d in choose(v[v.n == n], data.layout.scenarios, beyond_scores(done, n)).items():
                self.selection_[(n, s, name)] = d

    def rows(self, c: str, n: int, s: str) -> pd.DataFrame:
        """The validation rows of scenario ``s`` at (c, n), one per estimator."""
        v = self.validation_
        return v[(v.clustering == c) & (v.n == n) & (v.scenario == s)]

    def to_dict(self, c: str, n: int, s: str, json_names: set, served=None) -> dict:
        """The artifact's validation figures of every estimator of scenario ``s`` at (c, n), ``recommended`` (the best
        of ``json_names``, computable from the JSON alone) and ``recommended_learned``: this selector's tinybench
        choice with ``served``'s selection-aware interval (the :class:`~.served_intervals.ServedIntervals` step)
        when c is the clustering it chose, else the best of all."""
        vs = self.rows(c, n, s)
        ests = {
            r.estimator: {"val_mae_t1": enc(r.val_mae_t1), "val_mae_t2": enc(r.val_mae_t2), "n_val": int(r.n_val)}
            for r in vs.itertuples(index=False)
        }
        if served is not None:
            sel = self.selection_[(n, s, "tinybench")]
            learned = {"t1": sel["t1"][1], "t2": sel["t2"][1]}
            interval = served.to_dict(n, s)
            if interval is not None:
                learned["interval_t1"] = interval
        else:
            learned = best(vs)
        recommended = best(vs[vs.estimator.isin(list(json_names))])
        return {"estimators": ests, "recommended": recommended, "recommended_learned": learned}

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
