"""Out-of-distribution questions: a router knows only questions like its training questions.

``GuardedRouter`` wraps a fitted router with its training questions' embeddings. A new question whose most similar
training question is less similar than ``threshold_`` (the ``quantile`` of the training questions' own
nearest-neighbour similarities, each question left out of its own neighbours) is flagged out of distribution; the
caller routes it to the model the router trusts most overall (the best training accuracy, ``acc_``).
"""

from __future__ import annotations

import numpy as np

from .knn import nearest, normalize_rows, unit_rows
from .routers import BaseRouter

OOD_QUANTILE = 0.01


def self_similarity(E: np.ndarray) -> np.ndarray:
    """(n,) every row's cosine similarity to its most similar OTHER row (duplicates count: similarity 1)."""
    idx, sim = nearest(E, E, 2)
    own = idx[:, 0] == np.arange(len(E))
    return np.where(own, sim[:, 1], sim[:, 0]) if sim.shape[1] > 1 else np.ones(len(E))


class GuardedRouter(BaseRouter):
    """A fitted router and its training questions: ``predict_proba`` is the router's, ``novelty`` flags questions
    unlike every training question."""

    name = "guarded"

    def __init__(self, base: BaseRouter, quantile: float = OOD_QUANTILE):
        self.base, self.quantile = base, float(quantile)

    def params(self):
        return {"base": self.base.describe(), "quantile": self.quantile}

    def fit(self, E, Y, groups=None):
        """Record the training questions (``base`` is fitted already on the same ones)."""
        self._fit_common(Y)
        self.ref_ = normalize_rows(E).astype(np.float16)
        self.threshold_ = np.array(float(np.quantile(self_similarity(E), self.quantile)))
        return self

    def predict_proba(self, E):
        return self.base.predict_proba(E)

    def novelty(self, E) -> tuple[np.ndarray, np.ndarray]:
        """(similarity of each question's most similar training question (n,), out-of-distribution flag (n,))."""
        _, sim = nearest(E, self.ref_, 1, ref_unit=unit_rows(self.ref_))  # as normalize_rows(ref_ as float32)
        top = sim[:, 0].astype(float)
        return top, top < float(self.threshold_)

    def state(self):
        return {
            "router": self.name,
            "params": {"quantile": self.quantile},
            "members": [self.base.state()],
            "arrays": {"acc_": self.acc_, "ref_": self.ref_, "threshold_": self.threshold_},
        }
