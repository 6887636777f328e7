"""Adaptive testing on an answer bank: no IRT model, the leaderboard's own answers as the prior.

The bank is the training models' answers on one scenario, ``B`` (N models x I items, 0/1 or fractions). A new
model is taken to answer like one of them: bank model j gives answer y to item i with likelihood
``p^y (1 - p)^(1 - y)``, ``p = eps + (1 - 2 eps) B[j, i]`` (``eps`` the chance it answers otherwise). After the asked
items the posterior weight of j is the product of those likelihoods (uniform prior). Then

* next item: the unasked item that minimises the expected posterior variance of the model's accuracy on the
  still-unasked items (``eps_select``; ties to the lower index);
* estimate: the balance-weighted accuracy with the asked items' real answers and, for every unasked item, its
  posterior mean answer ``sum_j pi_j B[j, i]`` (``eps_estimate``; like p-IRT, exact when every item is asked);
* interval: split-conformal (:class:`~.calibration.ConformalInterval`) on validation models.

``eps_select`` and ``eps_estimate`` are chosen per test length on VALIDATION models (:class:`BankAdaptive`), never
on the models it then estimates. Measured on the Open LLM Leaderboard (benchmarks/estimation.py, grouped splits):
15 bank-adaptive items beat 30 static anchors, where IRT-adaptive items did not (README, benchmark figures).

:func:`simulate_bank` runs many models' tests at once (backtests, tuning); :class:`BankSession` runs one model's
test item by item (``tinybench adaptive``), asking exactly what :func:`simulate_bank` would ask.
"""

from __future__ import annotations

import numpy as np

from .adaptive import ItemSession
from .bank import log_tables, soft_answers
from .calibration import ConformalInterval
from .estimators import weighted_accuracy
from .groups import grouped_test_mask

EPS_SELECT = (0.1, 0.2)
EPS_ESTIMATE = (0.05, 0.1, 0.2, 0.3)
MAX_VAL_MODELS = 500  # validation models that choose eps and the interval (a seeded subsample above this)
MAX_BANK_MODELS = None  # no cap: on openllm a 1,500-model bank cost 0.2 points at n = 15 against all ~3,300


def bank_matrix(Y, max_models: int | None = MAX_BANK_MODELS, seed: int = 0) -> np.ndarray:
    """The bank from training models' answers Y (N, I), NaN = missing: models without any answer dropped, a missing
    answer replaced by the item's mean over the bank (a soft answer), at most ``max_models`` rows (seeded)."""
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    Y = Y[~np.isnan(Y).all(1)]
    if len(Y) == 0:
        raise ValueError("the answer bank is empty: no training model answered this scenario")
    if max_models is not None and len(Y) > max_models:
        Y = Y[np.sort(np.random.default_rng(seed).choice(len(Y), max_models, replace=False))]
    return soft_answers(Y)


def _loglik_step(B_cols, y, eps):
    """log-likelihood of answers y (M,) under bank columns B_cols (M, N) (each row: the bank's answers to the item
    asked of model m)."""
    p = eps + (1 - 2 * eps) * B_cols
    y = y[:, None]
    return y * np.log(p) + (1 - y) * np.log1p(-p)


def _normalise(logw):
    w = np.exp(logw - logw.max(1, keepdims=True))
    return w / w.sum(1, keepdims=True)


def _item_gain(pi, U, Pb):
    """(M, I) value of asking each item: ``E_y[E[u | y]^2]`` with u the accuracy on the unasked items; the largest
    minimises the expected posterior variance ``E_y[Var(u | y)]``. pi : (M, N) posterior weights; U : (M, N) each
    bank model's accuracy on the model's unasked items; Pb : (N, I) P(correct | bank model) under eps_select."""
    M = pi.shape[0]
    AP = np.concatenate([pi * U, pi], axis=0) @ Pb  # (2M, I): one matmul for both sums
    A1, P1 = AP[:M], np.clip(AP[M:], 1e-9, 1 - 1e-9)
    A0 = (pi * U).sum(1, keepdims=True) - A1
    return A1 * A1 / P1 + A0 * A0 / (1 - P1)


def _pool_estimate(B, W, asked_mask, answers_known, logw):
    """Balance-weighted accuracy: the asked items' answers plus each unasked item's posterior mean answer."""
    post = _normalise(logw) @ B  # (M, I) posterior mean answer per item
    return answers_known + np.where(asked_mask, 0.0, post * W).sum(1)


def simulate_bank(
    Y, B, w=None, n_values=(10, 20, 30), eps_select: float = 0.2, eps_estimate=EPS_ESTIMATE, dtype=np.float32
) -> dict[int, dict]:
    """Bank-adaptive tests of M models at once, answers read from their answer vectors.

    Y : (M, I) answers in [0, 1], NaN = the model cannot be asked that item. B : (N, I) the bank (no NaN,
    :func:`bank_matrix`). w : (I,) balance weights. Returns {n: {"asked": (M, n) item indices, "answers": (M, n),
    "estimates": {eps: (M,)}}} for n in n_values (a model with fewer askable items stops early: -1 / NaN pad).
    """
    Y, B = np.asarray(Y, dtype=float), np.asarray(B, dtype=dtype)
    M, I = Y.shape
    if B.shape[1] != I:
        raise ValueError(f"bank has {B.shape[1]} items, answers {I}")
    W = (np.ones(I) if w is None else np.asarray(w, dtype=float)).astype(dtype)
    W = W / W.sum()
    eps_estimate = tuple(float(e) for e in np.atleast_1d(eps_estimate))
    n_max = min(max(n_values), I)
    available = ~np.isnan(Y)
    Pb = (eps_select + (1 - 2 * eps_select) * B).astype(dtype)  # (N, I) P(correct | bank model)
    U = np.broadcast_to(B @ W, (M, B.shape[0])).astype(dtype).copy()  # (M, N) bank accuracy on the unasked items
    # 0/1 bank and answers: the log-likelihood under any eps is (mismatches) * log(eps / (1 - eps)) + const, so one
    # count matrix serves every eps; else one log-likelihood matrix per eps, from per-eps tables (I, N)
    binary = bool(np.isin(B, (0.0, 1.0)).all() and np.isin(Y[available], (0.0, 1.0)).all())
    if binary:
        mis = np.zeros((M, B.shape[0]), dtype=dtype)
    else:
        logw = {e: np.zeros((M, B.shape[0]), dtype=dtype) for e in {eps_select, *eps_estimate}}
        tables = {e: log_tables(B, e) for e in logw}

    def loglik(e):
        return mis * dtype(np.log(e / (1 - e))) if binary else logw[e]

    asked_mask = np.zeros((M, I), dtype=bool)
    known = np.zeros(M, dtype=float)
    asked, answers = np.full((M, n_max), -1), np.full((M, n_max), np.nan)
    rows = np.arange(M)
    out = {}
    for step in range(1, n_max + 1):
        gain = _item_gain(_normalise(loglik(eps_select)), U, Pb)
        gain[~available] = -np.inf
        nxt = np.argmax(gain, axis=1)
        ok = available[rows, nxt]
        y = np.where(ok, Y[rows, nxt], 0.0)
        available[rows, nxt] = False
        asked_mask[rows[ok], nxt[ok]] = True
        asked[ok, step - 1], answers[ok, step - 1] = nxt[ok], y[ok]
        known += np.where(ok, W[nxt] * y, 0.0)
        cols = B[:, nxt].T  # (M, N)
        U -= np.where(ok[:, None], W[nxt][:, None] * cols, 0)
        if binary:
            mis += (cols != y.astype(dtype)[:, None]) & ok[:, None]
        else:
            yk = np.where(ok, y, 0.0).astype(dtype)[:, None]
            nk = np.where(ok, 1 - y, 0.0).astype(dtype)[:, None]
            for e, lw in logw.items():
                l1, l0 = tables[e]
                lw += yk * l1[nxt] + nk * l0[nxt]
        if step in n_values:
            out[step] = {
                "asked": asked[:, :step].copy(),
                "answers": answers[:, :step].copy(),
                "estimates": {
                    e: _pool_estimate(B, W, asked_mask, known, loglik(e)).astype(float) for e in eps_estimate
                },
            }
    return out


class BankAdaptive:
    """Bank-adaptive estimator with ``eps_select``, ``eps_estimate`` and the interval chosen per n on validation.

    fit(B, Y_val, truth_val, w, n_values): B the bank (fit models only), Y_val the validation models' answers,
    truth_val their pool accuracy. Sets ``choice_`` {n: (eps_select, eps_estimate)}, ``val_mae_`` {n: MAE} and
    ``intervals_`` {n: ConformalInterval}. predict(Y, B) -> {n: (estimate, lower, upper)} (B may be a larger bank
    than the fit's, e.g. fit + validation models).
    """

    def __init__(
        self,
        alpha: float = 0.1,
        interval_scale: str = "binomial",
        eps_select=EPS_SELECT,
        eps_estimate=EPS_ESTIMATE,
        max_val_models: int | None = MAX_VAL_MODELS,
        seed: int = 0,
    ):
        self.alpha, self.interval_scale = alpha, interval_scale
        self.eps_select, self.eps_estimate = tuple(eps_select), tuple(eps_estimate)
        self.max_val_models, self.seed = max_val_models, seed

    def fit(self, B, Y_val, truth_val, w=None, n_values=(10, 20, 30)) -> "BankAdaptive":
        t = np.asarray(truth_val, dtype=float)
        ok = np.isfinite(t)
        if ok.sum() < 2:
            raise ValueError("BankAdaptive.fit needs at least 2 validation models with a known accuracy")
        if self.max_val_models is not None and ok.sum() > self.max_val_models:  # seeded subsample: cost, not accuracy
            keep = np.random.default_rng(self.seed).choice(np.flatnonzero(ok), self.max_val_models, replace=False)
            ok = np.zeros_like(ok)
            ok[keep] = True
        self.w_ = None if w is None else np.asarray(w, dtype=float)
        best: dict[int, tuple] = {}
        for es in self.eps_select:
            for n, r in simulate_bank(np.asarray(Y_val)[ok], B, w, n_values, es, self.eps_estimate).items():
                for ee, x in r["estimates"].items():
                    mae = float(np.mean(np.abs(x - t[ok])))
                    if n not in best or mae < best[n][0]:
                        best[n] = (mae, es, ee, x)
        self.choice_ = {n: (es, ee) for n, (_, es, ee, _) in best.items()}
        self.val_mae_ = {n: m for n, (m, *_rest) in best.items()}
        self.intervals_ = {
            n: ConformalInterval(self.alpha, self.interval_scale).fit(x, t[ok]) for n, (_, _, _, x) in best.items()
        }
        return self

    def predict(self, Y, B, n_values=None) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        ns = [n for n in (n_values or self.choice_) if n in self.choice_]
        out = {}
        for es in sorted({self.choice_[n][0] for n in ns}):
            nd = tuple(n for n in ns if self.choice_[n][0] == es)
            sim = simulate_bank(Y, B, self.w_, nd, es, sorted({self.choice_[n][1] for n in nd}))
            for n in nd:
                x = sim[n]["estimates"][self.choice_[n][1]]
                out[n] = (x, *self.intervals_[n].predict(x))
        return dict(sorted(out.items()))

    def params(self) -> dict:
        """JSON-able choices (a CLI state file caches them): per n, eps_select, eps_estimate, the interval's
        quantiles and scale."""
        return {
            str(n): {
                "eps_select": es,
                "eps_estimate": ee,
                "val_mae": self.val_mae_[n],
                "q_lo": self.intervals_[n].q_lo_,
                "q_hi": self.intervals_[n].q_hi_,
                "scale": self.interval_scale,
                "floor": self.intervals_[n].floor,
                "alpha": self.alpha,
            }
            for n, (es, ee) in sorted(self.choice_.items())
        }


def tune_bank(
    Y,
    w=None,
    n_values=(10, 20, 30),
    val_fraction: float = 0.25,
    seed: int = 0,
    groups=None,
    alpha: float = 0.1,
    max_models: int | None = MAX_BANK_MODELS,
) -> dict:
    """Choose the bank-adaptive parameters on a leaderboard's own models (for a new model's test): a seeded
    ``val_fraction`` of them (whole ``groups`` when given) are simulated on a bank of the others.
    Y : (N, I) the scenario's answers. Returns :meth:`BankAdaptive.params`."""
    Y = np.asarray(Y, dtype=float)
    Y = Y[~np.isnan(Y).all(1)]
    if len(Y) < 20:
        raise ValueError(f"{len(Y)} models answered this scenario: too few to tune an adaptive test on (need 20)")
    if groups is not None:
        is_val = grouped_test_mask(groups, val_fraction, f"bank:{seed}")
    else:
        is_val = np.random.default_rng(seed).random(len(Y)) < val_fraction
    if is_val.sum() < 10 or (~is_val).sum() < 10:
        is_val = np.random.default_rng(seed).permutation(len(Y)) < max(10, int(val_fraction * len(Y)))
    Yv = Y[is_val]
    truth = weighted_accuracy(Yv, np.ones(Y.shape[1]) if w is None else np.asarray(w, dtype=float))
    ns = tuple(n for n in n_values if n <= Y.shape[1])
    return BankAdaptive(alpha, seed=seed).fit(bank_matrix(Y[~is_val], max_models, seed), Yv, truth, w, ns).params()


def _nearest(params: dict, n: int) -> dict:
    keys = sorted(int(k) for k in params)
    return params[str(min(keys, key=lambda k: (abs(k - n), k)))]


class BankSession(ItemSession):
    """One model's bank-adaptive test, item by item (same interface as
    :class:`~tinybench_assets.core.estimation.adaptive.AdaptiveSession`).

    B : (N, I) the bank (:func:`bank_matrix` of the leaderboard's answers); items : (I,) ids; w : (I,) balance
    weights; params : :func:`tune_bank`'s choices per n (the test uses the eps_select chosen for ``max_items`` and,
    at each point, the estimate and interval chosen for the nearest tuned n). Stops after ``max_items`` answers or
    once the interval is at most ``target_width`` wide.
    """

    def __init__(self, B, items, w=None, *, params: dict, max_items: int = 30, target_width: float | None = None):
        self.B = np.asarray(B, dtype=np.float32)
        self._init_items(items, max_items, target_width)
        if self.B.shape[1] != len(self.items):
            raise ValueError(f"BankSession: the bank has {self.B.shape[1]} items, the pool {len(self.items)}")
        w = np.ones(len(self.items)) if w is None else np.asarray(w, dtype=float)
        self.W = (w / w.sum()).astype(np.float32)
        self.params = params
        self.eps_select = float(_nearest(params, self.max_items)["eps_select"])

    def _logw(self, eps) -> np.ndarray:
        lw = np.zeros((1, self.B.shape[0]), dtype=np.float32)
        for j, y in zip(self.asked, self.answers):
            lw += _loglik_step(self.B[:, j][None], np.array([y], dtype=np.float32), eps)
        return lw

    def next_item(self) -> str | None:
        if self.done:
            return None
        unasked = np.ones(len(self.items), dtype=bool)
        unasked[self.asked] = False
        U = (self.B @ (self.W * unasked))[None]  # (1, N) each bank model's accuracy on the unasked items
        Pb = self.eps_select + (1 - 2 * self.eps_select) * self.B
        gain = _item_gain(_normalise(self._logw(self.eps_select)), U, Pb)[0]
        gain[self.asked] = -np.inf
        gain[list(self.skipped)] = -np.inf
        return self.items[int(np.argmax(gain))]

    def estimate(self) -> dict:
        p = _nearest(self.params, max(len(self.asked), 1))
        mask = np.zeros((1, len(self.items)), dtype=bool)
        mask[0, self.asked] = True
        known = float(sum(self.W[j] * y for j, y in zip(self.asked, self.answers)))
        logw = self._logw(float(p["eps_estimate"]))
        e = float(_pool_estimate(self.B, self.W, mask, np.array([known]), logw)[0])
        if len(self.asked) < min(int(k) for k in self.params):
            # shorter than every tuned test: no calibrated interval yet; the posterior's own central range of the
            # bank models' accuracies (asked answers + their unasked part)
            acc = known + np.where(mask, 0.0, self.B * self.W).sum(1)
            order = np.argsort(acc)
            cdf = np.cumsum(_normalise(logw)[0][order])
            a = float(p["alpha"])
            lo = float(min(e, acc[order][min(np.searchsorted(cdf, a / 2), len(cdf) - 1)]))
            hi = float(max(e, acc[order][min(np.searchsorted(cdf, 1 - a / 2), len(cdf) - 1)]))
        else:
            ci = ConformalInterval(float(p["alpha"]), p["scale"], float(p["floor"]))
            ci.q_lo_, ci.q_hi_ = float(p["q_lo"]), float(p["q_hi"])
            lo, hi = (float(v[0]) for v in ci.predict(np.array([e])))
        return {
            "n": len(self.asked),
            "method": "bank",
            "estimate": e,
            "lower": lo,
            "upper": hi,
            "width": hi - lo,
            "interval_level": 1 - float(p["alpha"]),
        }

    def state(self) -> dict:
        return {
            "method": "bank",
            "asked": [self.items[j] for j in self.asked],
            "answers": list(self.answers),
            "max_items": self.max_items,
            "target_width": self.target_width,
            "bank_params": self.params,
        }
