"""The answer-bank estimator of the anchor predictor (``bank_joint``): the fit models' own answers as the prior.

A new model is taken to answer like fit model j up to a chance ``eps`` per item (P(correct) = eps + (1 - 2 eps)
b_j, b_j its answer; a fit model's missing answer is the item's mean over the fit models). Its answers on every
scenario's anchors give a posterior over the fit models; the estimate of scenario s is the model's own anchor
answers plus the posterior mean of the fit models' accuracy on s's other items (each term balance-weighted, as
the T1 truth). Fit models that never ran s carry no weight for s. ``eps`` is chosen per (clustering, n, scenario)
on validation MAE, like the gp-IRT lambda. A nearest-neighbour view of the leaderboard: its errors differ from
the regressors' and IRT's, so it is chiefly a member of the convex ``stack`` (5 grouped splits, n=30 joint: served
T1 MAE 2.05 -> 1.97 with it in the stack).

:class:`AnswerBank` is the predictor's step; :func:`bank_estimates` applies one bank to any anchor layout (the small
boards' folds use it too).
"""

from __future__ import annotations

import numpy as np

from .fill import FILL, FILL_LAMBDAS, fill_estimates
from .small_rules import mae as masked_mae

BANK_EPS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4)
CHUNK_CELLS = 1 << 22  # new models x bank models per likelihood block: ~32 MB a matrix whatever the bank's size


def soft_answers(Y) -> np.ndarray:
    """(F, I) answers with each missing cell replaced by its column's mean (0.5 when the column has none)."""
    Y = np.asarray(Y, dtype=float)
    seen = ~np.isnan(Y)
    cnt = seen.sum(0)
    mean = np.where(cnt > 0, np.where(seen, Y, 0.0).sum(0) / np.maximum(cnt, 1), 0.5)
    return np.where(seen, Y, mean[None, :])


def log_tables(B, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """(log P, log(1 - P)), each (items, bank models) and C-ordered, for P = eps + (1 - 2 eps) B (B (models, items),
    its dtype kept): the per-answer log-likelihoods of every bank model. C-ordered whatever B's memory layout, since
    BLAS sums in an order that depends on it and the artifact (bank read from a file) must match the predictor."""
    P = eps + (1.0 - 2.0 * eps) * B
    return np.ascontiguousarray(np.log(P).T), np.ascontiguousarray(np.log1p(-P).T)


def bank_values(Yb, cols, anchor_local, w) -> np.ndarray:
    """(F,) each bank model's balance-weighted accuracy on a scenario's non-anchor items as a share of the whole
    pool's weight (NaN where the model has no answer in the scenario; a missing answer counts as the item mean).
    Yb (F, I_all); cols (N,) the scenario's columns; anchor_local its anchors' local indices; w (N,) weights."""
    Ys = np.asarray(Yb, dtype=float)[:, cols]
    W = np.asarray(w, dtype=float) / np.sum(w)
    unseen = np.ones(len(cols), dtype=bool)
    unseen[np.asarray(anchor_local, dtype=int)] = False
    vals = soft_answers(Ys)[:, unseen] @ W[unseen]
    return np.where(np.isnan(Ys).all(1), np.nan, vals)


def bank_arrays(Yb, cols: dict, w, anchor_local: dict) -> dict:
    """The answer bank of ``Yb``'s rows: {"answers": (F', A) float32 soft answers at every scenario's anchors (in
    ``cols``' order), "values": (F', S) bank_values per scenario}, F' the rows with an answer somewhere (soft answers'
    item means taken over all of ``Yb``). cols : {scenario: (N_s,) columns}; w : (I_all,); anchor_local :
    {scenario: (k_s,) anchors' local indices}."""
    values = np.column_stack([bank_values(Yb, c, anchor_local[s], np.asarray(w)[c]) for s, c in cols.items()])
    keep = np.isfinite(values).any(1)
    at = np.concatenate([np.asarray(c)[np.asarray(anchor_local[s], dtype=int)] for s, c in cols.items()])
    answers = np.ascontiguousarray(soft_answers(Yb)[keep][:, at], dtype=np.float32)
    return {"answers": answers, "values": values[keep]}


def posterior_means(Ya, answers, values, eps: float) -> np.ndarray:
    """(M, K) posterior mean of ``values`` (F, K) over the bank given the new models' answers.

    Ya (M, A) 0/1 answers (NaN: not asked); answers (F, A) the bank's soft answers; a bank row whose value is
    NaN gets no weight for that column. NaN where a row of Ya has no answer or no bank row has a value."""
    Ya = np.asarray(Ya, dtype=float)
    lp, lq = log_tables(np.asarray(answers, dtype=float), eps)
    values = np.asarray(values, dtype=float)
    has = np.isfinite(values)
    vals0 = np.where(has, values, 0.0)
    out = np.full((len(Ya), values.shape[1]), np.nan)
    rows = max(1, CHUNK_CELLS // max(len(values), 1))
    for lo in range(0, len(Ya), rows):
        A = Ya[lo : lo + rows]
        ok = ~np.isnan(A)
        L = (ok & (A == 1)) @ lp + (ok & (A == 0)) @ lq  # (m, F) log-likelihood of each bank model
        E = np.exp(L - L.max(1, keepdims=True))  # one exp for every column of values
        num, den = E @ vals0, E @ has.astype(float)  # (m, K): every column's weighted sum and weight at once
        for k in np.flatnonzero(has.any(0)):
            low = den[:, k] < 1e-200  # the best bank models lack this column: rescale those rows by their own max
            if low.any():
                Lk = L[low][:, has[:, k]]
                p = np.exp(Lk - Lk.max(1, keepdims=True))
                num[low, k], den[low, k] = p @ values[has[:, k], k], p.sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo : lo + len(A)] = np.where(has.any(0), num / den, np.nan)
        out[lo : lo + len(A)][~ok.any(1)] = np.nan
    return out


def bank_estimates(Y, cols: dict, w, anchor_sets: dict, bank: dict, eps: dict) -> dict:
    """{scenario: (M,) bank_joint estimate} for rows Y (M, I_all), reading only the anchors.

    cols : {scenario: (N_s,) columns} (scenario order); w : (I_all,) balance weights; anchor_sets : {scenario:
    AnchorSet}; bank : {"answers", "values"} (:func:`bank_arrays` at these anchors); eps : {scenario: eps}."""
    Y = np.asarray(Y, dtype=float)
    Ya = Y[:, np.concatenate([anchor_sets[s].items for s in cols])]
    out, cache = {}, {}
    for k, s in enumerate(cols):
        e = eps[s]
        if e not in cache:  # one likelihood per distinct eps, every scenario's values at once
            cache[e] = posterior_means(Ya, bank["answers"], bank["values"], e)
        A = anchor_sets[s]
        ws = np.asarray(w)[cols[s]]
        Ys = Y[:, A.items]
        seen = np.where(np.isnan(Ys), 0.0, Ys) @ (ws[A.local] / ws.sum())  # unanswered anchors count as wrong
        out[s] = np.where(np.isnan(Ys).all(1), np.nan, seen + cache[e][:, k])
    return out


def bank_json(bank: dict | None) -> dict | None:
    """The artifact's ``learned.bank`` of an answer bank: {models: F, eps: {scenario: eps}, and fill: {scenario: lam}
    where the bank serves fill too (estimation/fill.py)}, or None without one."""
    if bank is None:
        return None
    out = {"models": int(len(bank["answers"])), "eps": {s: float(e) for s, e in bank["eps"].items()}}
    if bank.get("fill") is not None:
        out["fill"] = {s: float(x) for s, x in bank["fill"].items()}
    return out


def bank_tree_arrays(bank: dict | None) -> dict:
    """The tree file's arrays of an answer bank (``tiny_benchmark.trees.BANK_ARRAYS``), {} for None."""
    if bank is None:
        return {}
    return {
        "bank_answers": np.asarray(bank["answers"], dtype="<f4").ravel(),
        "bank_values": np.asarray(bank["values"], dtype="<f8").ravel(),
    }


class AnswerBank:
    """Step 5: the answer bank of every (clustering, n), from the fit models, with ``eps`` (bank_joint) and the ridge
    strength of fill (the ridge fill-in on the same arrays, estimation/fill.py) per scenario on validation MAE.

    Parameter: ``enabled`` (False: no bank; the predictor ties it to its learned estimators). Fitted attribute:
    ``banks_`` ({(clustering, n): {"answers": (F, A) float32 soft answers at every scenario's anchors, "values": (F, S)
    the fit models' weighted accuracy on each scenario's non-anchor items (NaN: scenario not run), "eps": {scenario:
    float}, "fill": {scenario: float}}}).
    """

    def __init__(self, enabled: bool = True):
        self.enabled = enabled

    @classmethod
    def from_banks(cls, banks: dict) -> "AnswerBank":
        step = cls(enabled=bool(banks))
        step.banks_ = dict(banks)
        return step

    def fit(self, data, done) -> None:
        """The bank of every (c, n) from ``data.Yf``; eps and fill's lam per scenario by MAE on the validation models
        ``data.Yv``."""
        self.banks_ = {}
        if not self.enabled:
            return
        lay, anchors = data.layout, done["anchors"]
        for c in anchors.clusterings:
            for n in anchors.n_values:
                sets = anchors.of(c, n)
                bank = bank_arrays(data.Yf, lay.cols, lay.w, {s: A.local for s, A in sets.items()})
                args = (data.Yv, lay.cols, lay.w, sets, bank)
                self.banks_[(c, n)] = {
                    **bank,
                    "eps": _lowest_mae(bank_estimates, args, BANK_EPS, data),
                    FILL: _lowest_mae(fill_estimates, args, FILL_LAMBDAS, data),
                }

    def to_dict(self, c: str, n: int) -> dict | None:
        """The artifact's ``learned.bank`` of (c, n) (its arrays: :meth:`tree_arrays`), None without a bank."""
        return bank_json(self.banks_.get((c, n)))

    def tree_arrays(self, c: str, n: int) -> dict:
        """The tree file's arrays of the bank of (c, n), {} without one."""
        return bank_tree_arrays(self.banks_.get((c, n)))

    def predict(self, Y, lay, anchors, c, n) -> dict:
        """{(scenario, estimator): (M,)}: bank_joint with the fitted eps, and fill (estimation/fill.py) with its
        lam where the bank has one (every bank fitted since fill joined the big predictor; an older artifact's bank
        may lack it); {} when (c, n) has no bank."""
        bank = self.banks_.get((c, n))
        if bank is None:
            return {}
        out = {
            (s, "bank_joint"): v
            for s, v in bank_estimates(Y, lay.cols, lay.w, anchors.of(c, n), bank, bank["eps"]).items()
        }
        if bank.get("fill") is not None:
            fills = fill_estimates(Y, lay.cols, lay.w, anchors.of(c, n), bank, bank["fill"])
            out.update({(s, FILL): v for s, v in fills.items()})
        return out


def _lowest_mae(estimate, args: tuple, grid, data) -> dict:
    """{scenario: the value x of ``grid`` whose ``estimate(*args, {scenario: x})`` ({scenario: (V,)}) has the lowest
    MAE against the validation models' truth ``data.T1v`` where both are finite (small_rules.mae; ties: the earlier
    value)."""
    mae = {}
    for x in grid:
        pred = estimate(*args, dict.fromkeys(data.layout.scenarios, x))
        for s in data.layout.scenarios:
            t = data.T1v[s].to_numpy()
            mae[(s, x)] = masked_mae(pred[s], t, np.isfinite(t))
    return {s: min(grid, key=lambda x: mae[(s, x)]) for s in data.layout.scenarios}
