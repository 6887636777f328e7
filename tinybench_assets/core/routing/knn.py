"""Cosine nearest neighbours in sentence-embedding space and KNN imputation of IRT item parameters.

The routing tutorial gives an unseen question the mean discrimination ``a`` and difficulty ``b`` of
its ``k`` most similar training questions. ``weighting`` generalises the mean:

- ``uniform``: plain mean over the k neighbours (the tutorial);
- ``similarity``: weights proportional to max(cosine similarity, 0) (uniform if all are <= 0);
- ``softmax``: weights proportional to exp(similarity / temperature).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pandas as pd

WEIGHTINGS = ("uniform", "similarity", "softmax")


def normalize_rows(E: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero). E: (n, d) -> (n, d) float32."""
    E = np.asarray(E, dtype=np.float32)
    norm = np.linalg.norm(E, axis=1, keepdims=True)
    return E / np.where(norm > 0, norm, 1.0)


_UNIT: dict[int, tuple] = {}
_LAST: list = [None]  # (weak reference to a query array, the reference rows' unit array, their similarities)
MEMO_ROWS = 256


def unit_rows(E_ref: np.ndarray) -> np.ndarray:
    """``normalize_rows(E_ref)`` of a fitted router's reference rows, computed once per array and kept while the array
    lives: a router would normalize its training rows again at every prediction (RouteLLM's MMLU router: 11,000 x
    1,408 floats, three times per question, most of a one-question decision). The array must not change after it is
    first seen here (fitted routers' arrays do not)."""
    return _memo(_UNIT, E_ref, normalize_rows)


def _memo(store: dict, obj: np.ndarray, make) -> np.ndarray:
    """``make(obj)``, computed once per array and kept in ``store`` while the array lives (keyed by its id, checked
    through a weak reference, dropped when the array is collected)."""
    key = id(obj)
    hit = store.get(key)
    if hit is not None and hit[0]() is obj:
        return hit[1]
    value = make(obj)
    store[key] = (weakref.ref(obj, lambda _, k=key: store.pop(k, None)), value)
    return value


def _product(Q: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``Q @ R.T`` accumulated in float64 and rounded to float32, so that a question gets the same similarities
    alone as in a batch (the server decides a question alone or among others; ``tinybench route`` a file at once).
    In float32 the BLAS kernel chosen for the batch's row count rounds differently (up to 5e-8; a lone row through a
    two-row product matched a batch's on Intel cores and not on AMD ones); float64 sums differ by ~1e-16, below
    float32's rounding. A fitted router's reference rows (``unit_rows``) are widened once."""
    return (np.asarray(Q, dtype=np.float64) @ _wide(R).T).astype(np.float32)


_WIDE: dict[int, tuple] = {}


def _wide(R: np.ndarray) -> np.ndarray:
    """``R`` as float64; kept while a ``unit_rows`` array lives (so a one-question decision does not widen a
    router's reference rows each time), converted per call otherwise."""
    if any(u[1] is R for u in _UNIT.values()):
        return _memo(_WIDE, R, lambda a: np.asarray(a, dtype=np.float64))
    return np.asarray(R, dtype=np.float64)


def _similarities(E_query, Q, R, ref_unit):
    """``Q @ R.T``; for a few queries against a fitted router's rows (``ref_unit`` given) the last result is reused
    when the same query array comes again: an ensemble's kNN members (vote, shrunk vote, task vote) share their
    training rows, so one decision computes the similarities once instead of three times (bitwise the same)."""
    if ref_unit is None:
        return _product(Q, R)
    last = _LAST[0]
    if last is not None and last[0]() is E_query and last[1] is ref_unit:
        return last[2]
    S = _product(Q, R)
    try:
        _LAST[0] = (weakref.ref(E_query), ref_unit, S)
    except TypeError:  # a query that is not an ndarray (a list): nothing to remember it by
        pass
    return S


def nearest(
    E_query: np.ndarray, E_ref: np.ndarray, k: int, *, chunk: int = 1024, ref_unit: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The k most cosine-similar reference rows of every query row.

    Parameters
    ----------
    E_query : (n, d) embeddings; E_ref : (m, d) embeddings (need not be normalized).
    k : neighbours per query (capped at m).
    ref_unit : ``normalize_rows(E_ref)`` when the caller has it (``unit_rows``), else computed here.

    Returns
    -------
    idx : (n, k) int -- reference row indices, most similar first (ties: lower index first).
    sim : (n, k) float32 -- their cosine similarities.
    """
    Q, R = normalize_rows(E_query), normalize_rows(E_ref) if ref_unit is None else ref_unit
    m = R.shape[0]
    if m == 0:
        raise ValueError("no reference rows to take neighbours from")
    k = int(min(max(k, 1), m))
    idx = np.empty((Q.shape[0], k), dtype=np.int64)
    sim = np.empty((Q.shape[0], k), dtype=np.float32)
    for s in range(0, Q.shape[0], chunk):
        one = Q.shape[0] <= min(chunk, MEMO_ROWS)  # a few queries, one chunk: the memo may serve them
        S = _similarities(E_query, Q, R, ref_unit) if one else _product(Q[s : s + chunk], R)
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
    ref_unit: np.ndarray | None = None,
) -> ImputedParams:
    """Discrimination and difficulty of unseen questions from their k nearest training questions.

    a_train : (m, D) discriminations of the training questions; b_train : (m,) difficulties.
    Returns weighted means over the neighbours: a (n, D), b (n,), with the neighbours and weights.
    """
    a_train = np.atleast_2d(np.asarray(a_train, dtype=np.float64))
    if a_train.shape[0] != len(E_train):
        a_train = a_train.reshape(len(E_train), -1)
    b_train = np.asarray(b_train, dtype=np.float64)
    idx, sim = nearest(E_query, E_train, k, ref_unit=ref_unit)  # ref_unit: see nearest
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
