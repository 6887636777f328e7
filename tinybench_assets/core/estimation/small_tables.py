"""Small leaderboards, part 3: the fitted :class:`~.small_board.SmallBoardPredictor`'s tables (anchors, CV, out-of-fold
estimates) and its served T1 intervals applied out of fold, each fold's calibrated on the other folds only."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .small_choice import pooled_half_widths

__all__ = ["served_oof", "oof_intervals", "anchor_table", "cv_table", "oof_table"]


def served_oof(p, choices: dict, n: int) -> tuple[dict, dict]:
    """({scenario: (M,) out-of-fold served estimates}, {scenario: (M,) T1}) of budget n."""
    return ({s: choices[(s, n)].oof_served for s in p.cols_},
            {s: p.truth_t1_[:, j] for j, s in enumerate(p.cols_)})


def oof_intervals(p, n: int) -> pd.DataFrame:
    """The served T1 intervals applied to the out-of-fold served estimates, each fold's calibrated on the
    other folds only (so their coverage is measured, not fitted): model, scenario, estimate, lower, upper,
    truth_t1."""
    est_, truth = served_oof(p, p.choices_, int(n))
    parts = []
    for f in range(p.n_folds_):
        mine = p.folds_ == f
        half = pooled_half_widths(est_, truth, ~mine, p.alpha)
        for s in p.cols_:
            e = est_[s][mine]
            parts.append(pd.DataFrame({"model": np.asarray(p.models_, dtype=object)[mine], "scenario": s,
                                       "estimate": e, "lower": np.clip(e - half[s], 0, 1),
                                       "upper": np.clip(e + half[s], 0, 1), "truth_t1": truth[s][mine]}))
    return pd.concat(parts, ignore_index=True)


def anchor_table(p) -> pd.DataFrame:
    """Served anchors: scenario, n, item, item_index (column of Y), weight."""
    rows = []
    for s, fit in p.fits_.items():
        for n, (local, weights) in fit.anchors.items():
            for j, wt in zip(local, weights):
                col = int(p.cols_[s][j])
                rows.append({"scenario": s, "n": n, "item": p.items_[col], "item_index": col, "weight": float(wt)})
    return pd.DataFrame(rows)


def cv_table(p) -> pd.DataFrame:
    """Out-of-fold MAEs: scenario, n, estimator, dim (0: no IRT), lambda, cv_mae_t1, cv_mae_t2, n_models, ...;
    estimator "served" is the leave-one-fold-out of the whole choice (the served estimator's honest MAE)."""
    return pd.DataFrame([r for ch in p.choices_.values() for r in ch.cv])


def oof_table(p) -> pd.DataFrame:
    """Out-of-fold estimates per model: model, group, fold, scenario, n, estimator, dim, eps (bank_joint),
    estimate, estimate_t2, truth_t1, truth_t2 (estimator "served": the choice made without the model's fold)."""
    parts = []
    for (s, n), ch in p.choices_.items():
        j = p.scenarios_.index(s)
        ests = [(row["estimator"], row["dim"], r.eps, x, x2)  # the CV table's names
                for r, row, x, x2 in zip(ch.rules, ch.cv, ch.oof, ch.oof_t2)]
        for e, d, eps, x, x2 in ests + [("served", ch.dim, None, ch.oof_served, np.nan)]:
            parts.append(pd.DataFrame({"model": p.models_, "group": p.groups_, "fold": p.folds_,
                                       "scenario": s, "n": n, "estimator": e, "dim": d,
                                       "eps": np.nan if eps is None else eps, "estimate": x,
                                       "estimate_t2": x2, "truth_t1": p.truth_t1_[:, j],
                                       "truth_t2": p.truth_t2_[:, j]}))
    return pd.concat(parts, ignore_index=True)
