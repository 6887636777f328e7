"""Small leaderboards, step 3 of :meth:`~.small_board.SmallBoardPredictor.fit` over the whole board: the board's rule
of every budget (on every row and without each fold, :func:`~.small_choice.board_rule`), every (scenario, n)'s
choice from the out-of-fold estimates (:func:`~.small_choice.choose_scenario`), and the served T1 and T2 intervals
calibrated over every scenario and budget at once (:func:`~.small_intervals.pooled_intervals`)."""

from __future__ import annotations

import numpy as np

from . import small_tables
from .small_choice import board_rule, choose_scenario, rules_for
from .small_guard import expected_errors, gate, gate_note
from .small_intervals import MIN_T2, pooled_intervals

__all__ = ["choose_board"]


def _row_variance(Ys: np.ndarray) -> np.ndarray:
    """(M,) each model's variance of its answers across the scenario's items (NaN without answers): the rows of
    the tutorial's v (``estimators.mean_item_variance`` is their mean)."""
    has = ~np.isnan(Ys).all(1)
    out = np.full(len(Ys), np.nan)
    out[has] = np.nanvar(Ys[has], axis=1)
    return out


def choose_board(p, Y) -> tuple[dict, dict, list]:
    """The choice of every (scenario, n) on the fitted state of SmallBoardPredictor ``p`` (``layout_``, ``folds_``,
    ``truth_``, ``counts_``, ``oof_`` and its parameters); Y : (M, I) the board's answers.

    Returns ({(scenario, n): ScenarioChoice}, the board's rules {n: {None | fold: (estimator, dim) or None}}, notes
    [str] on what the board is too small for)."""
    L, folds, truth, ns, notes = p.layout_, p.folds_, p.truth_, p._ns(), []
    fams, need = len(set(L.groups)), int(np.ceil(1 / p.alpha)) - 1
    if fams < need:
        notes.append(
            f"{fams} families: a {1 - p.alpha:.0%} conformal interval needs {need}; "
            "intervals are the largest cross-validated residual"
        )
    out = {}
    bases = {
        (s, n): {D: {**p.oof_.base[(s, n, D)], **p.oof_.shrink[(s, n)]} for D in p.dims} for s in L.cols for n in ns
    }
    truths = {s: truth.t1[:, j] for j, s in enumerate(L.cols)}
    var = {s: _row_variance(Y[:, c]) for s, c in L.cols.items()}
    bias = {s: {D: p.oof_.bias[(s, D)] for D in p.dims} for s in L.cols}

    def board(n, rows):  # the board's rule of budget n, read on ``rows`` only
        rules = {s: rules_for(bases[(s, n)], bias[s], var[s], truths[s], rows, p.counts_[(s, n)])[0] for s in L.cols}
        return board_rule({s: bases[(s, n)] for s in L.cols}, rules, truths, rows)

    board_rules = {
        n: {
            None: board(n, np.ones(len(Y), dtype=bool)),  # every row, and without each fold
            **{f: board(n, folds.ids != f) for f in range(folds.n)},
        }
        for n in ns
    }
    for j, (s, _c) in enumerate(L.cols.items()):
        if np.isfinite(truth.t2[:, j]).sum() < MIN_T2:
            notes.append(f"scenario {s!r}: fewer than {MIN_T2} models with a full score: no T2")
        for n in ns:
            out[(s, n)] = choose_scenario(
                s,
                n,
                p.counts_[(s, n)],
                bases[(s, n)],
                bias[s],
                var[s],
                truths[s],
                truth.t2[:, j],
                folds.ids,
                L.groups,
                alpha=p.alpha,
                scale=p.interval_scale,
                bank=p.oof_.bank[(s, n)],
                prefer=board_rules[n],
                fill=p.oof_.fill[(s, n)],
            )
    if p.gate:  # the random-items gate (small_guard.gate)
        expected = expected_errors(Y, L.w, L.cols, L.subscenarios, p.counts_, ns)
        for (s, n), ch in out.items():
            before = ch.served_mae
            if gate(ch, expected[s][n], truths[s], folds.ids):
                notes.append(gate_note(s, n, before, float(np.nanmean(expected[s][n][np.isfinite(truths[s])]))))
    # the served T1 intervals, calibrated over every scenario and budget at once; the T2 ones the same way, on each
    # row's T2 by the choice made without its fold
    for k, ci in pooled_intervals(*small_tables.served_oof_all(p, out), p.alpha).items():
        out[k].interval_t1[out[k].t1] = ci
    t2 = {k: ch.oof_t2_served for k, ch in out.items() if ch.oof_t2_served is not None}
    cols = list(L.cols)
    for k, ci in pooled_intervals(t2, {(s, n): truth.t2[:, cols.index(s)] for s, n in t2}, p.alpha).items():
        out[k].interval_t2[out[k].t2] = ci
    return out, board_rules, notes
