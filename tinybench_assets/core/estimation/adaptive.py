"""Computerized adaptive testing on a fitted multidimensional 2PL.

Fixed anchors ask every model the same items. An adaptive test asks each model the item that tells most
about *it*: the unasked item with the largest Fisher information at the model's current ability estimate,
then re-estimates the ability and asks again (Fluid Benchmarking, 2025; metabench). With D > 1 "the most
information" needs a target: the default rule ("accuracy", c-optimal) asks the item that most shrinks the
posterior variance of the pool ACCURACY; "fisher" (D-optimal) the one that most grows log det of the posterior
precision of theta. Measured on openllm (2,000 training / 600 test models, p-IRT T1 MAE at n = 10): arc D=10
5.07 (fisher) vs 4.13 (accuracy), truthfulqa D=10 4.94 vs 3.12; D=2 fits ask better than D=10 (arc 3.33).

* :func:`map_abilities` : batched MAP abilities, each model from its own asked items (N(0, prior_sd^2) prior),
  with the posterior precision H.
* :func:`simulate` : runs the adaptive test for many models at once from their full answer vectors (the
  backtest's held-out models, simulated from their real answers) and returns the estimates after n items.
* :class:`AdaptiveSession` : one model, item by item (``next_item`` / ``record`` / ``estimate`` / ``done``),
  JSON-serializable state; what ``tinybench adaptive`` drives.
* :class:`AdaptiveEstimator` : the estimators at the end -- IRT (mean of P over the pool), p-IRT (asked answers
  plus P on the rest) and gp-IRT (a validation-chosen mix of the asked items' weighted mean and p-IRT) -- with
  the estimator per n chosen and its 90 % conformal interval fitted on VALIDATION models only.

Shapes: ``a`` (I, D) discriminations, ``b`` (I,) difficulties, ``w`` (I,) balance weights, answers (M, I) 0/1
with NaN = no answer (such an item is never asked in a simulation).
"""

from __future__ import annotations

import numpy as np

from . import estimators as est
from .calibration import ConformalInterval

ESTIMATORS = ("adaptive_irt", "adaptive_pirt", "adaptive_gpirt")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.clip(x, -35, 35)))


def map_abilities(A, B, Y, theta0=None, prior_sd: float = 1.0, max_iter: int = 30, tol: float = 1e-8):
    """MAP abilities of M models, each from its own k asked items.

    A : (M, k, D) discriminations of the asked items; B : (M, k) difficulties; Y : (M, k) 0/1 answers, NaN =
    unused slot. theta0 : (M, D) start (warm start from the previous step). Returns (theta (M, D), H (M, D, D)):
    H is the posterior precision at theta (information of the asked items plus the prior's).
    """
    A, B, Y = (np.asarray(x, dtype=float) for x in (A, B, Y))
    M, k, D = A.shape
    used = ~np.isnan(Y)
    y = np.where(used, Y, 0.0)
    theta = np.zeros((M, D)) if theta0 is None else np.array(theta0, dtype=float)
    prec = np.eye(D) / prior_sd**2
    At = A.transpose(0, 2, 1)  # (M, D, k): batched matmuls below, several times faster than the einsums they replace
    for _ in range(max_iter):
        p = _sigmoid(np.matmul(A, theta[:, :, None])[..., 0] - B)
        r = np.where(used, y - p, 0.0)
        grad = np.matmul(At, r[:, :, None])[..., 0] - theta / prior_sd**2
        wgt = np.where(used, p * (1 - p), 0.0)
        H = np.matmul(At * wgt[:, None, :], A) + prec
        step = np.linalg.solve(H, grad[..., None])[..., 0]
        norm = np.linalg.norm(step, axis=1, keepdims=True)
        step = np.where(norm > 2.0, step * (2.0 / np.maximum(norm, 1e-12)), step)  # damped: log-concave, bounded steps
        theta = theta + step
        if np.max(np.abs(step)) < tol:
            break
    p = _sigmoid(np.matmul(A, theta[:, :, None])[..., 0] - B)
    wgt = np.where(used, p * (1 - p), 0.0)
    return theta, np.matmul(At * wgt[:, None, :], A) + prec


def item_gain(theta, H, a, b, chunk: int = 64, rule: str = "accuracy", w=None) -> np.ndarray:
    """Value of asking each item, for every model, shape (M, I).

    rule "fisher" (D-optimal): ``p (1 - p) a_j^T H^-1 a_j``, the gain in log det of the posterior precision.
    rule "accuracy" (c-optimal): the drop in the posterior variance of the pool accuracy ``g^T H^-1 g`` (g its
    gradient in theta, with balance weights ``w``) when item j is added: ``p (1 - p) (a_j . H^-1 g)^2 /
    (1 + p (1 - p) a_j^T H^-1 a_j)``. With D = 1 both choose the same item.
    """
    theta, a, b = np.asarray(theta, float), np.asarray(a, float), np.asarray(b, float)
    if rule not in ("fisher", "accuracy"):
        raise ValueError(f"unknown item rule {rule!r}: use 'fisher' or 'accuracy'")
    Hinv = np.linalg.inv(H)
    L = np.linalg.cholesky(Hinv)  # H^-1 = L L^T
    w = np.ones(len(b)) if w is None else np.asarray(w, dtype=float)
    out = np.empty((theta.shape[0], a.shape[0]))
    for s in range(0, theta.shape[0], chunk):
        p = _sigmoid(theta[s : s + chunk] @ a.T - b)
        pq = p * (1 - p)
        q = np.square(np.matmul(a[None], L[s : s + chunk])).sum(-1)  # a_j^T H^-1 a_j, batched BLAS
        if rule == "fisher":
            out[s : s + chunk] = pq * q
        else:
            g = (pq * w) @ a / w.sum()  # (m, D): d accuracy / d theta
            u = np.einsum("mde,me->md", Hinv[s : s + chunk], g)
            out[s : s + chunk] = pq * np.square(u @ a.T) / (1.0 + pq * q)
    return out


def pool_estimates(theta, H, asked, answers, a, b, w) -> dict[str, np.ndarray]:
    """Base estimates after the asked items. asked : (M, k) item indices; answers : (M, k). Returns
    {"irt", "pirt", "asked_mean", "posterior_sd"} each (M,)."""
    P = _sigmoid(theta @ a.T - b)  # (M, I)
    w = np.asarray(w, dtype=float)
    irt = est.irt_estimate(P, w)
    M, I = P.shape
    seen_mask = np.zeros((M, I), dtype=bool)
    np.put_along_axis(seen_mask, asked, True, axis=1)
    wa = w[asked]
    k = asked.shape[1]
    lam = k / I  # p-IRT (the tutorial's formula): lam * mean_seen(w y) + (1 - lam) * mean_unseen(w P)
    unseen = np.where(seen_mask, 0.0, P * w).sum(1) / max(I - k, 1)
    pirt = lam * (answers * wa).mean(1) + (1 - lam) * unseen if k else irt
    asked_mean = (answers * wa).sum(1) / np.maximum(wa.sum(1), 1e-12)
    g = np.einsum("mi,id->md", P * (1 - P) * w, a) / w.sum()  # d accuracy / d theta
    var = np.einsum("md,mde,me->m", g, np.linalg.inv(H), g)
    return {"irt": irt, "pirt": pirt, "asked_mean": asked_mean, "posterior_sd": np.sqrt(np.maximum(var, 0.0))}


def simulate(
    Y, a, b, w, n_values=(10, 20, 30), prior_sd: float = 1.0, rule: str = "accuracy"
) -> dict[int, dict[str, np.ndarray]]:
    """Adaptive tests of M models at once, answers read from their full answer vectors.

    Y : (M, I) 0/1, NaN = no answer. Returns {n: {"asked": (M, n) items, "answers": (M, n), "theta": (M, D),
    "irt", "pirt", "asked_mean", "posterior_sd": (M,)}} for every n in n_values (n <= I).
    """
    Y, a, b = np.asarray(Y, float), np.asarray(a, float), np.asarray(b, float)
    if a.ndim == 1:
        a = a[:, None]
    M, I = Y.shape
    n_max = min(max(n_values), I)
    available = ~np.isnan(Y)
    theta = np.zeros((M, a.shape[1]))
    H = np.broadcast_to(np.eye(a.shape[1]) / prior_sd**2, (M, a.shape[1], a.shape[1])).copy()
    asked = np.zeros((M, 0), dtype=int)
    answers = np.zeros((M, 0))
    out = {}
    rows = np.arange(M)
    for step in range(1, n_max + 1):
        gain = item_gain(theta, H, a, b, rule=rule, w=w)
        gain[~available] = -np.inf
        nxt = np.argmax(gain, axis=1)
        ok = np.isfinite(gain[rows, nxt])
        available[rows, nxt] = False
        asked = np.concatenate([asked, nxt[:, None]], axis=1)
        answers = np.concatenate([answers, np.where(ok, Y[rows, nxt], np.nan)[:, None]], axis=1)
        theta, H = map_abilities(a[asked], b[asked], answers, theta, prior_sd)
        if step in n_values:
            ans = np.where(np.isnan(answers), 0.0, answers)
            out[step] = {
                "asked": asked.copy(),
                "answers": answers.copy(),
                "theta": theta.copy(),
                **pool_estimates(theta, H, asked, ans, a, b, w),
            }
    return out


class AdaptiveEstimator:
    """Estimators at the end of an adaptive test, chosen and calibrated on validation models.

    fit(sim_val, truth_val) with ``sim_val = simulate(Y_val, ...)`` and truth (M_val,) pool accuracies:
    per n, the gp-IRT lambda on a grid, the served estimator (lowest validation MAE among ESTIMATORS) and its
    conformal interval. predict(sim) -> {n: {estimator: (estimate, lower, upper)}} with "adaptive" the served one.
    """

    def __init__(self, alpha: float = 0.1, interval_scale: str = "binomial", lambda_grid=est.LAMBDA_GRID):
        self.alpha, self.interval_scale, self.lambda_grid = alpha, interval_scale, np.asarray(lambda_grid)

    def _raw(self, r: dict, n: int) -> dict[str, np.ndarray]:
        lam = self.lambdas_.get(n, 0.0)
        return {
            "adaptive_irt": r["irt"],
            "adaptive_pirt": r["pirt"],
            "adaptive_gpirt": lam * r["asked_mean"] + (1 - lam) * r["pirt"],
        }

    def fit(self, sim_val: dict, truth) -> "AdaptiveEstimator":
        t = np.asarray(truth, dtype=float)
        ok = np.isfinite(t)
        self.lambdas_, self.served_, self.val_mae_, self.intervals_ = {}, {}, {}, {}
        for n, r in sim_val.items():
            self.lambdas_[n], _ = est.choose_lambda(r["asked_mean"][ok], r["pirt"][ok], t[ok], self.lambda_grid)
            raw = self._raw(r, n)
            for name, x in raw.items():
                self.val_mae_[(n, name)] = float(np.mean(np.abs(x[ok] - t[ok])))
                self.intervals_[(n, name)] = ConformalInterval(self.alpha, self.interval_scale).fit(x[ok], t[ok])
            self.served_[n] = min(ESTIMATORS, key=lambda e: (self.val_mae_[(n, e)], ESTIMATORS.index(e)))
        return self

    def predict(self, sim: dict) -> dict[int, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        out = {}
        for n, r in sim.items():
            if n not in self.served_:
                continue
            raw = self._raw(r, n)
            res = {name: (x, *self.intervals_[(n, name)].predict(x)) for name, x in raw.items()}
            res["adaptive"] = res[self.served_[n]]
            out[n] = res
        return out


class ItemSession:
    """What every one-model adaptive session shares: the item ids, the answers so far, skipped items, the stop rule
    (``max_items`` answers, or an interval at most ``target_width`` wide) and the state round trip. A subclass
    sets its parameters, calls :meth:`_init_items`, and implements ``next_item``, ``estimate`` (a dict with
    ``width``) and ``state``; :meth:`_recorded` runs after each answer."""

    def _init_items(self, items, max_items, target_width) -> None:
        self.items = [str(i) for i in items]
        self.index = {it: j for j, it in enumerate(self.items)}
        if len(self.index) != len(self.items):
            raise ValueError(f"{type(self).__name__}: item ids must be unique")
        self.max_items, self.target_width = int(max_items), target_width
        self.asked: list[int] = []
        self.answers: list[float] = []
        self.skipped: set[int] = set()  # items the model cannot be asked (no answer available): never chosen

    def _recorded(self) -> None:
        """Hook after each recorded answer (e.g. re-estimate the ability)."""

    @property
    def done(self) -> bool:
        if len(self.asked) >= min(self.max_items, len(self.items) - len(self.skipped)):
            return True
        return self.target_width is not None and bool(self.asked) and self.estimate()["width"] <= self.target_width

    def _position(self, item: str) -> int:
        if str(item) not in self.index:
            raise KeyError(f"unknown item {item!r}: not in this scenario's pool")
        return self.index[str(item)]

    def skip(self, item: str) -> None:
        """Never ask ``item`` (e.g. a batch of answers lacks it); it does not count as answered."""
        self.skipped.add(self._position(item))

    def record(self, item: str, score: float) -> None:
        j = self._position(item)
        if j in self.asked:
            raise ValueError(f"item {item!r} was already answered")
        score = float(score)
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"score of {item!r} must be in [0, 1], got {score}")
        self.asked.append(j)
        self.answers.append(score)
        self._recorded()

    def restore(self, state: dict):
        for item, score in zip(state.get("asked", []), state.get("answers", [])):
            self.record(item, score)
        return self


class AdaptiveSession(ItemSession):
    """One model's adaptive test, item by item.

    Parameters
    ----------
    a : (I, D) and b : (I,) the scenario's fitted item parameters; items : (I,) item ids; w : (I,) balance
        weights (default 1). max_items : stop after this many answers. target_width : also stop once the
        interval (estimate +- z * posterior sd of the pool accuracy) is at most this wide. z : 1.645 -> 90 %.
    rule : "accuracy" (default; the item that most shrinks the posterior variance of the pool accuracy) or
        "fisher" (D-optimal), see :func:`item_gain`.

    ``next_item()`` -> the id to ask (None when done); ``record(item, score)``; ``estimate()`` -> dict with the
    ability, n, the IRT and p-IRT estimates and the interval; ``state()`` / ``from_state`` round-trip the answers.
    """

    def __init__(
        self,
        a,
        b,
        items,
        w=None,
        *,
        max_items: int = 30,
        target_width: float | None = None,
        prior_sd: float = 1.0,
        z: float = 1.645,
        rule: str = "accuracy",
    ):
        self.a = np.asarray(a, dtype=float).reshape(len(b), -1)
        self.b = np.asarray(b, dtype=float)
        self._init_items(items, max_items, target_width)
        self.w = np.ones(len(self.b)) if w is None else np.asarray(w, dtype=float)
        self.prior_sd, self.z, self.rule = prior_sd, z, rule
        self._fit()

    def _recorded(self) -> None:
        self._fit()

    def _fit(self) -> None:
        D = self.a.shape[1]
        if self.asked:
            idx = np.array([self.asked])
            self.theta_, H = map_abilities(self.a[idx], self.b[idx], np.array([self.answers]), prior_sd=self.prior_sd)
        else:
            self.theta_, H = np.zeros((1, D)), np.eye(D)[None] / self.prior_sd**2
        self.H_ = H

    def next_item(self) -> str | None:
        if self.done:
            return None
        gain = item_gain(self.theta_, self.H_, self.a, self.b, rule=self.rule, w=self.w)[0]
        gain[self.asked] = -np.inf
        gain[list(self.skipped)] = -np.inf
        return self.items[int(np.argmax(gain))]

    def estimate(self) -> dict:
        idx = np.array([self.asked], dtype=int).reshape(1, -1)
        ans = np.array([self.answers], dtype=float).reshape(1, -1)
        r = pool_estimates(self.theta_, self.H_, idx, ans, self.a, self.b, self.w)
        e, sd = float(r["pirt"][0]), float(r["posterior_sd"][0])
        lo, hi = max(0.0, e - self.z * sd), min(1.0, e + self.z * sd)
        return {
            "n": len(self.asked),
            "theta": self.theta_[0].round(6).tolist(),
            "estimate": e,
            "irt": float(r["irt"][0]),
            "pirt": e,
            "lower": lo,
            "upper": hi,
            "width": hi - lo,
        }

    def state(self) -> dict:
        return {
            "method": "irt",
            "asked": [self.items[j] for j in self.asked],
            "answers": list(self.answers),
            "max_items": self.max_items,
            "target_width": self.target_width,
        }
