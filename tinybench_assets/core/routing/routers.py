"""Routers: small fit / predict objects that give P(correct) for every (question, model).

Every router follows one shape (scikit-learn style): parameters in ``__init__``, ``fit(E, Y, groups)`` on
training questions (E: (n, d) sentence embeddings, Y: (n, M) 0/1 correctness, NaN = missing; ``groups``: each
question's task, used by the task-aware routers of :mod:`.task` and ignored by the others),
fitted state in attributes with a trailing underscore, ``predict_proba(E) -> (n, M)`` and
``state()`` to save it as plain arrays and numbers (no pickle; core/routing/saved.py writes and reads the files).
Routing itself (argmax with the tie-break) is :func:`tinybench_assets.core.routing.metrics.route`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .knn import impute_item_params, nearest, neighbour_weights, normalize_rows, unit_rows


def model_accuracy(Y: np.ndarray) -> np.ndarray:
    """Per-model training accuracy (M,), ignoring missing cells (0.5 when a model has none)."""
    Y = np.asarray(Y, dtype=float)
    n = np.sum(~np.isnan(Y), axis=0)
    return np.where(n > 0, np.nansum(Y, axis=0) / np.maximum(n, 1), 0.5)


def cv_folds(n: int, n_folds: int, seed: int) -> np.ndarray:
    """Fold id (n,) of every question: a seeded permutation cut into ``n_folds`` near-equal parts."""
    if n < n_folds:
        raise ValueError(f"{n} training questions cannot make {n_folds} folds")
    fold = np.empty(n, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % n_folds
    return fold


class BaseRouter:
    name = "base"

    def params(self) -> dict:
        return {}

    def describe(self) -> str:
        p = self.params()
        return self.name + ("(" + ", ".join(f"{k}={v}" for k, v in p.items()) + ")" if p else "")

    def _fit_common(self, Y):
        Y = np.asarray(Y, dtype=float)
        if Y.ndim != 2 or Y.shape[1] < 1:
            raise ValueError(f"Y must be (questions, models), got shape {Y.shape}")
        self.acc_ = model_accuracy(Y)
        return Y

    def state(self) -> dict:
        arrays = {k: v for k, v in vars(self).items() if k.endswith("_") and isinstance(v, np.ndarray)}
        return {"router": self.name, "params": self.params(), "arrays": arrays}


class BestSingleRouter(BaseRouter):
    """Always the model with the best training accuracy: P = each model's training accuracy."""

    name = "best_single"

    def fit(self, E, Y, groups=None):
        self._fit_common(Y)
        return self

    def predict_proba(self, E):
        return np.tile(self.acc_, (len(E), 1))


class KNNVoteRouter(BaseRouter):
    """P(model correct on q) from the k nearest training questions, shrunk toward the model's accuracy.

    P_m(q) = (sum_j w_j y_jm + shrink * acc_m) / (sum_j w_j + shrink), w_j = k * neighbour weight
    (so ``shrink`` counts pseudo-neighbours); ``shrink = 0`` is the direct nearest-neighbour vote.
    """

    name = "knn_vote"

    def __init__(self, k: int = 20, weighting: str = "uniform", shrink: float = 0.0):
        self.k, self.weighting, self.shrink = int(k), weighting, float(shrink)

    def params(self):
        return {"k": self.k, "weighting": self.weighting, "shrink": self.shrink}

    def fit(self, E, Y, groups=None):
        Y = self._fit_common(Y)
        self.E_ = normalize_rows(E)
        self.Y_ = Y.astype(np.float32)
        return self

    def predict_proba(self, E):
        idx, sim = nearest(E, self.E_, self.k, ref_unit=unit_rows(self.E_))
        return vote_proba(idx, sim, self.Y_, self.acc_, self.k, self.weighting, self.shrink)


def vote_proba(idx, sim, Y, acc, k, weighting, shrink):
    """Shrunk neighbour vote from precomputed neighbours (idx, sim sorted most similar first)."""
    idx, sim = idx[:, :k], sim[:, :k]
    w = neighbour_weights(sim, weighting) * idx.shape[1]  # (n, k), sums to k per row
    Yn = Y[idx]  # (n, k, M)
    obs = ~np.isnan(Yn)
    num = np.einsum("nk,nkm->nm", w, np.where(obs, Yn, 0.0)) + shrink * acc[None, :]
    den = np.einsum("nk,nkm->nm", w, obs.astype(np.float64)) + shrink
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), acc[None, :])


class KNNIRTRouter(BaseRouter):
    """The routing tutorial: a D-dimensional 2PL on the training questions, each new question's a and b
    imputed from its k nearest training questions, P_m(q) = sigmoid(a_q . theta_m - b_q)."""

    name = "knn_irt"

    def __init__(self, dim: int = 1, k: int = 20, weighting: str = "uniform", seed: int = 0, device: str = "cpu"):
        self.dim, self.k, self.weighting, self.seed, self.device = int(dim), int(k), weighting, int(seed), device

    def params(self):
        return {"dim": self.dim, "k": self.k, "weighting": self.weighting}

    def fit(self, E, Y, groups=None):
        # lazy: loads torch (~1.2 s)
        from tinybench_assets.core.irt import fit_irt

        Y = self._fit_common(Y)
        p = fit_irt(Y.T, dim=self.dim, seed=self.seed, device=self.device)  # models x questions
        return self.set_params(E, p.a, p.b, p.theta, acc=self.acc_)

    def set_params(self, E, a, b, theta, acc=None):
        """Use an existing IRT fit (a: (n, D), b: (n,) of the training questions, theta: (M, D))."""
        self.E_ = normalize_rows(E)
        self.a_ = np.atleast_2d(np.asarray(a, dtype=np.float64)).reshape(len(self.E_), -1)
        self.b_ = np.asarray(b, dtype=np.float64)
        self.theta_ = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        self.dim = self.a_.shape[1]
        if acc is not None:
            self.acc_ = np.asarray(acc, dtype=np.float64)
        return self

    def impute(self, E):
        return impute_item_params(E, self.E_, self.a_, self.b_, self.k, self.weighting, ref_unit=unit_rows(self.E_))

    def predict_proba(self, E):
        imp = self.impute(E)
        return irt_proba(imp.a, imp.b, self.theta_)


def irt_proba(a, b, theta):
    """P(correct) (n questions, M models) = sigmoid(a_q . theta_m - b_q)."""
    z = np.atleast_2d(a) @ np.atleast_2d(theta).T - np.asarray(b)[:, None]
    return 1.0 / (1.0 + np.exp(-z))


def pirt_table(params: pd.DataFrame, models: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The ``pirt_predictions`` table: P(correct) of every (model, question) from the questions' ``params`` (item, a,
    b) and the models' abilities ``models`` (model, theta), one row per pair; and P (questions, models)."""
    P = irt_proba(
        np.vstack(params["a"].to_numpy()), params["b"].to_numpy(dtype=float), np.vstack(models["theta"].to_numpy())
    )
    long = pd.DataFrame(
        {
            "model": np.tile(models["model"].to_numpy(dtype=object), len(params)),
            "item": np.repeat(params["item"].to_numpy(dtype=object), len(models)),
            "p": P.reshape(-1),
        }
    )
    return long, P


class LogisticRouter(BaseRouter):
    """One L2-regularised logistic regression per model on the (normalized) question embedding."""

    name = "logistic"

    def __init__(self, C: float = 1.0, max_iter: int = 500):
        self.C, self.max_iter = float(C), int(max_iter)

    def params(self):
        return {"C": self.C}

    def fit(self, E, Y, groups=None):
        from sklearn.linear_model import LogisticRegression

        Y = self._fit_common(Y)
        X = normalize_rows(E)
        M = Y.shape[1]
        self.coef_ = np.zeros((M, X.shape[1]))
        self.intercept_ = np.zeros(M)
        for m in range(M):
            obs = ~np.isnan(Y[:, m])
            y = Y[obs, m]
            if len(np.unique(y)) < 2:  # constant: the logit of its (smoothed) rate, no slope
                rate = (y.sum() + 0.5) / (len(y) + 1.0)
                self.intercept_[m] = np.log(rate / (1 - rate))
                continue
            lr = LogisticRegression(C=self.C, max_iter=self.max_iter)
            lr.fit(X[obs], y.astype(int))
            self.coef_[m], self.intercept_[m] = lr.coef_[0], lr.intercept_[0]
        return self

    def predict_proba(self, E):
        z = normalize_rows(E) @ self.coef_.T + self.intercept_[None, :]
        return 1.0 / (1.0 + np.exp(-z))


class MFRouter(BaseRouter):
    """Matrix factorization (RouteLLM's strongest family): P(correct) = sigmoid(v_m . (W' x) + b_m), x the normalized
    question embedding, W (d, rank) a projection shared by every model, v_m (rank,) a model's vector, b_m its bias.
    Fitted on the observed cells by L-BFGS on the mean log-loss plus ``l2`` x (|W|^2 + |V|^2), from a seeded start."""

    name = "mf"

    def __init__(self, rank: int = 8, l2: float = 1e-2, max_iter: int = 300, seed: int = 0):
        self.rank, self.l2, self.max_iter, self.seed = int(rank), float(l2), int(max_iter), int(seed)

    def params(self):
        return {"rank": self.rank, "l2": self.l2}

    def fit(self, E, Y, groups=None):
        from scipy.optimize import minimize

        Y = self._fit_common(Y)
        X = normalize_rows(E).astype(float)
        obs = ~np.isnan(Y)
        Yz, n_obs = np.where(obs, Y, 0.0), max(int(obs.sum()), 1)
        (d, r), M = (X.shape[1], self.rank), Y.shape[1]
        rate = np.clip((Yz.sum(0) + 0.5) / (obs.sum(0) + 1.0), 1e-3, 1 - 1e-3)
        g = np.random.default_rng(self.seed)
        x0 = np.concatenate([0.1 * g.standard_normal(d * r), 0.1 * g.standard_normal(M * r), np.log(rate / (1 - rate))])

        def unpack(x):
            return x[: d * r].reshape(d, r), x[d * r : d * r + M * r].reshape(M, r), x[d * r + M * r :]

        def loss(x):
            W, V, b = unpack(x)
            H = X @ W
            Z = H @ V.T + b
            ll = np.where(obs, np.logaddexp(0.0, Z) - Yz * Z, 0.0).sum() / n_obs
            G = np.where(obs, 1.0 / (1.0 + np.exp(-Z)) - Yz, 0.0) / n_obs
            reg = self.l2 * ((W**2).sum() + (V**2).sum())
            gW, gV = X.T @ (G @ V) + 2 * self.l2 * W, G.T @ H + 2 * self.l2 * V
            return ll + reg, np.concatenate([gW.ravel(), gV.ravel(), G.sum(0)])

        res = minimize(loss, x0, jac=True, method="L-BFGS-B", options={"maxiter": self.max_iter})
        self.W_, self.V_, self.b_ = (np.asarray(a, dtype=float) for a in unpack(res.x))
        return self

    def predict_proba(self, E):
        z = (normalize_rows(E) @ self.W_) @ self.V_.T + self.b_[None, :]
        return 1.0 / (1.0 + np.exp(-z))


class EnsembleRouter(BaseRouter):
    """The mean of its members' P(correct)."""

    name = "ensemble"

    def __init__(self, members: list[BaseRouter]):
        if not members:
            raise ValueError("an ensemble needs at least one member")
        self.members = list(members)

    def params(self):
        return {"members": [m.describe() for m in self.members]}

    def fit(self, E, Y, groups=None):
        self._fit_common(Y)
        for m in self.members:
            m.fit(E, Y, groups)
        return self

    @classmethod
    def of_fitted(cls, members: list[BaseRouter], Y) -> EnsembleRouter:
        """The ensemble of routers already fitted on the training answers ``Y`` (they are not fitted again)."""
        r = cls(members)
        r._fit_common(Y)
        return r

    def predict_proba(self, E):
        return np.mean([m.predict_proba(E) for m in self.members], axis=0)

    def state(self):
        return {
            "router": self.name,
            "params": {},
            "arrays": {"acc_": self.acc_},
            "members": [m.state() for m in self.members],
        }
