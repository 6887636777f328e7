"""Cosine nearest neighbours in sentence-embedding space and KNN imputation of IRT item parameters.

The routing tutorial gives an unseen question the mean discrimination ``a`` and difficulty ``b`` of
its ``k`` most similar training questions. ``weighting`` generalises the mean:

- ``uniform``: plain mean over the k neighbours (the tutorial);
- ``similarity``: weights proportional to max(cosine similarity, 0) (uniform if all are <= 0);
- ``softmax``: weights proportional to exp(similarity / temperature).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

WEIGHTINGS = ("uniform", "similarity", "softmax")


def normalize_rows(E: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero). E: (n, d) -> (n, d) float32."""
    E = np.asarray(E, dtype=np.float32)
    norm = np.linalg.norm(E, axis=1, keepdims=True)
    return E / np.where(norm > 0, norm, 1.0)


def nearest(E_query: np.ndarray, E_ref: np.ndarray, k: int, *, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """The k most cosine-similar reference rows of every query row.

    Parameters
    ----------
    E_query : (n, d) embeddings; E_ref : (m, d) embeddings (need not be normalized).
    k : neighbours per query (capped at m).

    Returns
    -------
    idx : (n, k) int -- reference row indices, most similar first (ties: lower index first).
    sim : (n, k) float32 -- their cosine similarities.
    """
    Q, R = normalize_rows(E_query), normalize_rows(E_ref)
    m = R.shape[0]
    if m == 0:
        raise ValueError("no reference rows to take neighbours from")
    k = int(min(max(k, 1), m))
    idx = np.empty((Q.shape[0], k), dtype=np.int64)
    sim = np.empty((Q.shape[0], k), dtype=np.float32)
    for s in range(0, Q.shape[0], chunk):
        S = Q[s : s + chunk] @ R.T  # (c, m)
        if k < m:
            part = np.argpartition(-S, k - 1, axis=1)[:, :k]
        else:
            part = np.tile(np.arange(m), (S.shape[0], 1))
        ps = np.take_along_axis(S, part, axis=1)
        # most similar first, ties by lower reference index: deterministic
        order = np.lexsort((part, -ps), axis=1)
        idx[s : s + chunk] = np.take_along_axis(part, order, axis=1)
        sim[s : s + chunk] = np.take_along_axis(ps, order, axis=1)
    return idx, sim


def neighbour_weights(sim: np.ndarray, weighting: str = "uniform", temperature: float = 0.05) -> np.ndarray:
    """Row-normalized weights (n, k) from neighbour similarities (n, k)."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    sim = np.asarray(sim, dtype=np.float64)
    if weighting == "uniform":
        w = np.ones_like(sim)
    elif weighting == "similarity":
        w = np.clip(sim, 0.0, None)
        w[w.sum(axis=1) <= 0] = 1.0
    else:
        z = (sim - sim.max(axis=1, keepdims=True)) / float(temperature)
        w = np.exp(z)
    return w / w.sum(axis=1, keepdims=True)


@dataclass
class ImputedParams:
    """Item parameters imputed for query questions. a: (n, D), b: (n,), neighbours idx/sim: (n, k)."""

    a: np.ndarray
    b: np.ndarray
    idx: np.ndarray
    sim: np.ndarray
    weights: np.ndarray


def impute_item_params(
    E_query: np.ndarray,
    E_train: np.ndarray,
    a_train: np.ndarray,
    b_train: np.ndarray,
    k: int = 20,
    weighting: str = "uniform",
    temperature: float = 0.05,
) -> ImputedParams:
    """Discrimination and difficulty of unseen questions from their k nearest training questions.

    a_train : (m, D) discriminations of the training questions; b_train : (m,) difficulties.
    Returns weighted means over the neighbours: a (n, D), b (n,), with the neighbours and weights.
    """
    a_train = np.atleast_2d(np.asarray(a_train, dtype=np.float64))
    if a_train.shape[0] != len(E_train):
        a_train = a_train.reshape(len(E_train), -1)
    b_train = np.asarray(b_train, dtype=np.float64)
    idx, sim = nearest(E_query, E_train, k)
    w = neighbour_weights(sim, weighting, temperature)
    a = np.einsum("nk,nkd->nd", w, a_train[idx])
    b = np.einsum("nk,nk->n", w, b_train[idx])
    return ImputedParams(a=a, b=b, idx=idx, sim=sim, weights=w)


def imputed_test_params(fitted: pd.DataFrame, emb: pd.DataFrame, E: np.ndarray, k: int, weighting: str):
    """The ``knn_item_params`` table of a scenario: every test question's a and b from its ``k`` nearest embedded
    training questions with a fit. ``fitted``: the IRT fit's items (item, a, b); ``emb``: the embedded questions
    (item, split), rows of ``E``. Returns (table, a and b of the training questions used, ImputedParams)."""
    pos = {it: i for i, it in enumerate(emb["item"])}
    train = fitted[fitted["item"].isin(pos)].reset_index(drop=True)
    test = emb[emb["split"] == "test"].reset_index(drop=True)
    Etr, Ete = E[[pos[i] for i in train["item"]]], E[[pos[i] for i in test["item"]]]
    a_tr, b_tr = np.vstack(train["a"].to_numpy()), train["b"].to_numpy(dtype=float)
    imp = impute_item_params(Ete, Etr, a_tr, b_tr, k=k, weighting=weighting)
    names = train["item"].to_numpy(dtype=object)
    table = pd.DataFrame(
        {
            "item": test["item"],
            "b": imp.b,
            "a": list(imp.a),
            "neighbours": [list(names[r]) for r in imp.idx],
            "similarities": [list(map(float, r)) for r in imp.sim],
            "k": k,
            "weighting": weighting,
        }
    )
    return table, a_tr, b_tr, imp
