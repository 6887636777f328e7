"""Task-aware routers for mixed traffic: questions of several tasks (a leaderboard's scenarios, a scenario's
subscenarios) arrive with no task label.

Each training question carries its task (``groups`` at fit time). A new question's task is recognised by a linear
classifier of its embedding (one-vs-rest ridge regression in closed form, ``alpha``: on RouterDC's three tasks it
names the task of 98.6 % of test questions, where the majority of the 10 nearest training questions names 91 %), and
the recognised task's per-model accuracy is the prior it is routed by:

- ``task_prior``: P_m(q) = acc_{t(q), m}, the per-task best model without the task label;
- ``knn_task``: the k-nearest-neighbour vote shrunk toward that task prior (``shrink`` pseudo-neighbours), so a
  question leaves its task's best model only where its neighbours say so.

``acc_tm`` is model m's training accuracy on task t shrunk toward the task's mean over models (``TASK_SMOOTHING``
pseudo-questions): a model that never answered a task gets the task's mean, not its accuracy elsewhere.
"""

from __future__ import annotations

import numpy as np

from .knn import nearest, neighbour_weights, normalize_rows, unit_rows
from .routers import BaseRouter

TASK_SMOOTHING = 10.0


def task_index(groups) -> tuple[np.ndarray, np.ndarray]:
    """(task names (T,), each question's task index (n,)) of the training questions' labels."""
    names, idx = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    return names, idx.astype(np.int64)


def task_accuracy(Y: np.ndarray, task: np.ndarray, n_tasks: int, smoothing: float = TASK_SMOOTHING) -> np.ndarray:
    """(T, M) each model's accuracy per task, shrunk toward the task's mean over models (NaN cells: not answered)."""
    Y = np.asarray(Y, dtype=float)
    obs = ~np.isnan(Y)
    hits = np.zeros((n_tasks, Y.shape[1]))
    seen = np.zeros((n_tasks, Y.shape[1]))
    np.add.at(hits, task, np.where(obs, Y, 0.0))
    np.add.at(seen, task, obs.astype(float))
    mean = hits.sum(axis=1) / np.maximum(seen.sum(axis=1), 1.0)
    return (hits + smoothing * mean[:, None]) / (seen + smoothing)


def fit_task_classifier(E: np.ndarray, task: np.ndarray, n_tasks: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(W (d, T), b (T,)): one-vs-rest ridge regression of +-1 task indicators on the normalized embeddings."""
    X = normalize_rows(E).astype(np.float64)
    T = np.where(np.arange(n_tasks)[None, :] == np.asarray(task)[:, None], 1.0, -1.0)
    mx, mt = X.mean(axis=0), T.mean(axis=0)
    Xc = X - mx
    W = np.linalg.solve(Xc.T @ Xc + alpha * np.eye(X.shape[1]), Xc.T @ (T - mt))
    return W, mt - mx @ W


def recognise(E: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n,) the recognised task of every question: the classifier's highest score."""
    return np.argmax(normalize_rows(E).astype(np.float64) @ W + b, axis=1)


def task_vote(idx, sim, Y, task_q, acc_t, k: int = 0, shrink: float = 0.0) -> np.ndarray:
    """P (n, M): the recognised task's accuracies (``task_q`` (n,) task per query); with ``k`` > 0 the uniform vote of
    the first ``k`` precomputed neighbours shrunk toward them by ``shrink`` pseudo-neighbours."""
    prior = acc_t[task_q]
    if k <= 0:
        return prior
    w = neighbour_weights(sim[:, :k], "uniform") * min(k, idx.shape[1])
    Yn = Y[idx[:, :k]]
    obs = ~np.isnan(Yn)
    num = np.einsum("nk,nkm->nm", w, np.where(obs, Yn, 0.0)) + shrink * prior
    den = np.einsum("nk,nkm->nm", w, obs.astype(np.float64)) + shrink
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), prior)


class TaskRouter(BaseRouter):
    """``task_prior`` (``k`` = 0) or ``knn_task`` (``k`` > 0): see the module docstring. ``fit(E, Y, groups)`` needs
    each training question's task."""

    name = "task_prior"

    def __init__(self, alpha: float = 0.1, k: int = 0, shrink: float = 0.0):
        self.alpha, self.k, self.shrink = float(alpha), int(k), float(shrink)
        self.name = "knn_task" if self.k > 0 else "task_prior"

    def params(self):
        return {"alpha": self.alpha, "k": self.k, "shrink": self.shrink}

    def fit(self, E, Y, groups=None):
        if groups is None:
            raise ValueError(f"{self.name} needs each training question's task (groups)")
        Y = self._fit_common(Y)
        names, task = task_index(groups)
        self.E_ = normalize_rows(E)
        self.Y_ = Y.astype(np.float32)
        self.tasks_ = names
        self.task_acc_ = task_accuracy(Y, task, len(names))
        self.W_, self.b_ = fit_task_classifier(E, task, len(names), self.alpha)
        return self

    def predict_proba(self, E):
        idx, sim = nearest(E, self.E_, self.k, ref_unit=unit_rows(self.E_)) if self.k > 0 else (None, None)
        return task_vote(idx, sim, self.Y_, self.recognise(E), self.task_acc_, self.k, self.shrink)

    def recognise(self, E) -> np.ndarray:
        """(n,) each question's recognised task (an index into ``tasks_``)."""
        return recognise(E, self.W_, self.b_)
