"""Small leaderboards, part 3: the fitted :class:`~.small_board.SmallBoardPredictor`'s tables (anchors, CV, out-of-fold
estimates) and its served T1 intervals applied out of fold, each fold's calibrated on the other folds only."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .small_intervals import pooled_half_widths

__all__ = ["served_oof", "oof_intervals", "anchor_table", "cv_table", "oof_table"]


def served_oof(p, choices: dict, n: int) -> tuple[dict, dict]:
    """({scenario: (M,) out-of-fold served estimates}, {scenario: (M,) T1}) of budget n."""
    cols = p.layout_.cols
    return ({s: choices[(s, n)].oof_served for s in cols}, {s: p.truth_.t1[:, j] for j, s in enumerate(cols)})


def served_oof_all(p, choices: dict) -> tuple[dict, dict]:
    """:func:`served_oof` of every budget: ({(scenario, n): (M,)}, {(scenario, n): (M,)}), the pool the served
    intervals are calibrated on (small_intervals.pooled_half_widths)."""
    est_, truth = {}, {}
    for n in p._ns():
        e, t = served_oof(p, choices, n)
        est_.update({(s, n): v for s, v in e.items()})
        truth.update({(s, n): v for s, v in t.items()})
    return est_, truth


def oof_intervals(p, n: int) -> pd.DataFrame:
    """The served T1 intervals applied to the out-of-fold served estimates, each fold's calibrated on the
    other folds only (so their coverage is measured, not fitted): model, scenario, estimate, lower, upper,
    truth_t1."""
    est_, truth = served_oof_all(p, p.choices_)
    parts = []
    for f in range(p.folds_.n):
        mine = p.folds_.ids == f
        half = pooled_half_widths(est_, truth, ~mine, p.alpha)
        for s in p.layout_.cols:
            e = est_[(s, int(n))][mine]
            parts.append(
                pd.DataFrame(
                    {
                        "model": np.asarray(p.layout_.models, dtype=object)[mine],
                        "scenario": s,
                        "estimate": e,
                        "lower": np.clip(e - half[(s, int(n))], 0, 1),
                        "upper": np.clip(e + half[(s, int(n))], 0, 1),
                        "truth_t1": truth[(s, int(n))][mine],
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def anchor_table(p) -> pd.DataFrame:
    """Served anchors: scenario, n, item, item_index (column of Y), weight."""
    rows, L = [], p.layout_
    for s, fit in p.served_.fits.items():
        for n, (local, weights) in fit.anchors.items():
            for j, wt in zip(local, weights):
                col = int(L.cols[s][j])
                rows.append({"scenario": s, "n": n, "item": L.items[col], "item_index": col, "weight": float(wt)})
    return pd.DataFrame(rows)


def cv_table(p) -> pd.DataFrame:
    """Out-of-fold MAEs: scenario, n, estimator, dim (0: no IRT), lambda, cv_mae_t1, cv_mae_t2, n_models, ...;
    estimator "served" is the leave-one-fold-out of the whole choice (the served estimator's honest MAE)."""
    return pd.DataFrame([r for ch in p.choices_.values() for r in ch.cv])


def oof_table(p) -> pd.DataFrame:
    """Out-of-fold estimates per model: model, group, fold, scenario, n, estimator, dim, eps (bank_joint),
    estimate, estimate_t2, truth_t1, truth_t2 (estimator "served": the choice made without the model's fold)."""
    parts, L, truth = [], p.layout_, p.truth_
    for (s, n), ch in p.choices_.items():
        j = L.scenarios.index(s)
        ests = [
            (row["estimator"], row["dim"], r.eps, x, x2)  # the CV table's names
            for r, row, x, x2 in zip(ch.rules, ch.cv, ch.oof, ch.oof_t2)
        ]
        for e, d, eps, x, x2 in ests + [("served", ch.dim, None, ch.oof_served, np.nan)]:
            parts.append(
                pd.DataFrame(
                    {
                        "model": L.models,
                        "group": L.groups,
                        "fold": p.folds_.ids,
                        "scenario": s,
                        "n": n,
                        "estimator": e,
                        "dim": d,
                        "eps": np.nan if eps is None else eps,
                        "estimate": x,
                        "estimate_t2": x2,
                        "truth_t1": truth.t1[:, j],
                        "truth_t2": truth.t2[:, j],
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)
