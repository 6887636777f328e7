"""The backtest's adaptive column: adaptive tests of a split's test models, simulated from their real answers, each
method tuned and the served one chosen on the split predictor's validation models (:func:`adaptive_rows`, which
:func:`~tinybench_assets.core.estimation.backtest.run_backtest` calls per split with ``adaptive_n``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..irt import fit_irt
from ..responses import ResponseMatrix
from .adaptive import AdaptiveEstimator, simulate
from .adaptive_bank import BankAdaptive, bank_matrix
from .predictor import AnchorPredictor


@dataclass
class _Scenario:
    """One scenario's answers in a split: ``val`` (the validation models that answered it) with their accuracy
    ``truth_val``, ``test`` (the test models that answered it) with their ``names``, ``fit`` (the fit models that
    answered it), its columns and balance weights, and the test lengths ``ns`` its pool allows."""

    s: str
    cols: np.ndarray
    w: np.ndarray
    ns: tuple
    val: np.ndarray
    truth_val: np.ndarray
    test: np.ndarray
    names: np.ndarray
    fit: np.ndarray


def _frame(sc: _Scenario, n, name, e, lo, hi, method, dim) -> pd.DataFrame:
    """Rows of the test models ``sc.names`` for one (n, estimator) in the estimate table's columns."""
    return pd.DataFrame(
        {
            "model": sc.names,
            "scenario": sc.s,
            "clustering": "adaptive",
            "estimator": name,
            "n": n,
            "estimate": e,
            "lower": lo,
            "upper": hi,
            "estimate_t2": np.nan,
            "lower_t2": np.nan,
            "upper_t2": np.nan,
            "source": "adaptive",
            "adaptive_method": method,
            "adaptive_dim": dim,
        }
    )


def _irt_fits(pred: AnchorPredictor, sc: _Scenario, extra_dims) -> dict:
    """{D: IRTParams}: the predictor's own fit of the scenario and fits at ``extra_dims`` on the same fit models."""
    p = pred.named_steps["irt"].params_[sc.s]
    fits = {p.a.shape[1]: p}
    for d in extra_dims:
        if d not in fits:
            fits[d] = fit_irt(sc.fit, dim=d, seed=pred.seed, device=pred.device, **pred.irt_options)
    return fits


def _bank_rows(pred: AnchorPredictor, matrix: ResponseMatrix, sc: _Scenario, irt_best: dict, served: dict) -> list:
    """The bank-adaptive rows (tuned on the validation models against a bank of the fit models, run on a bank of all
    training models), also as the served ``adaptive`` rows at each n where its validation MAE is below
    ``irt_best[n]`` (the best IRT-adaptive one's); ``served[n]`` becomes "bank" there."""
    split = pred.named_steps["split"]
    ba = BankAdaptive(pred.alpha, pred.interval_scale, seed=pred.seed).fit(
        bank_matrix(sc.fit, seed=pred.seed), sc.val, sc.truth_val, sc.w, sc.ns
    )
    rows_fv = np.concatenate([split.fit_rows_, split.val_rows_])
    Bt = bank_matrix(matrix.scores[np.ix_(rows_fv, sc.cols)], seed=pred.seed)
    frames = []
    for n, (e, lo, hi) in ba.predict(sc.test, Bt).items():
        frames.append(_frame(sc, n, "adaptive_bank", e, lo, hi, "bank", np.nan))
        if ba.val_mae_[n] < irt_best[n]:
            served[n] = "bank"
            frames.append(_frame(sc, n, "adaptive", e, lo, hi, "bank", np.nan))
    return frames


def _scenario_rows(pred: AnchorPredictor, matrix: ResponseMatrix, sc: _Scenario, extra_dims, rule, bank) -> list:
    """One scenario's adaptive rows: IRT-adaptive per D tuned on the validation models (D and the end estimator
    chosen there), the bank's when ``bank``, and the served ``adaptive`` (the lower validation MAE at each n)."""
    fits = _irt_fits(pred, sc, extra_dims)
    cands = {
        d: AdaptiveEstimator(pred.alpha, pred.interval_scale).fit(
            simulate(sc.val, p.a, p.b, sc.w, sc.ns, rule=rule), sc.truth_val
        )
        for d, p in fits.items()
    }
    irt_mae = {n: {d: c.val_mae_[(n, c.served_[n])] for d, c in cands.items()} for n in sc.ns}
    best_d = {n: min(irt_mae[n], key=lambda d: (irt_mae[n][d], d)) for n in sc.ns}
    served = {n: "irt" for n in sc.ns}
    frames = []
    if bank:
        frames += _bank_rows(pred, matrix, sc, {n: irt_mae[n][best_d[n]] for n in sc.ns}, served)
    for d in sorted(set(best_d.values())):
        p, nd = fits[d], tuple(n for n in sc.ns if best_d[n] == d)
        for n, res in cands[d].predict(simulate(sc.test, p.a, p.b, sc.w, nd, rule=rule)).items():
            for name, (e, lo, hi) in res.items():
                if name != "adaptive" or served[n] == "irt":
                    frames.append(_frame(sc, n, name, e, lo, hi, "irt", float(d)))
    return frames


def adaptive_rows(
    pred: AnchorPredictor,
    matrix: ResponseMatrix,
    test,
    n_values,
    extra_dims=(2,),
    rule: str = "accuracy",
    bank: bool = True,
) -> pd.DataFrame:
    """Adaptive tests of the test models (simulated from their real answers), two methods side by side, each tuned
    and the served one chosen per n on the predictor's VALIDATION models:

    * IRT-adaptive (estimation/adaptive.py) on each scenario's IRT: the predictor's own fit (its D was chosen for
      static anchors) and fits at ``extra_dims`` on the same fit models (D = 2 asks better adaptive questions
      than D = 10 on openllm); D and the end estimator chosen on validation;
    * bank-adaptive (estimation/adaptive_bank.py; ``bank``): the training models' own answers as the prior, tuned on
      validation models against a bank of the fit models, then run on a bank of all training models.

    Rows as :meth:`AnchorPredictor.estimate` returns (clustering "adaptive"; estimators ``adaptive`` (served: the
    method with the lower validation MAE at that n), ``adaptive_irt``, ``adaptive_pirt``, ``adaptive_gpirt``,
    ``adaptive_bank``; ``adaptive_method`` names the method behind each row and ``adaptive_dim`` its IRT D (NaN
    for the bank)); T2 columns are NaN.
    """
    models = np.asarray(matrix.models, dtype=object)
    frames = []
    lay, split = pred.layout, pred.named_steps["split"]
    for s in lay.scenarios:
        cols = lay.cols[s]
        ns = tuple(n for n in n_values if n <= len(cols))
        Yv, Yt = matrix.scores[np.ix_(split.val_rows_, cols)], matrix.scores[np.ix_(test, cols)]
        hv, ht = ~np.isnan(Yv).all(1), ~np.isnan(Yt).all(1)
        if not ns or hv.sum() < 10 or not ht.any():
            continue
        truth_v = pred.pool_accuracy(matrix.scores[split.val_rows_[hv]])[s].to_numpy()
        Yf = matrix.scores[np.ix_(split.fit_rows_, cols)]
        sc = _Scenario(s, cols, lay.w[cols], ns, Yv[hv], truth_v, Yt[ht], models[test][ht], Yf[~np.isnan(Yf).all(1)])
        frames += _scenario_rows(pred, matrix, sc, extra_dims, rule, bank)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
